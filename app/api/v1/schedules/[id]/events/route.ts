// GET /api/v1/schedules/{id}/events – occurrences that made no run (missed, skipped, buffered), runs cancelled by a newer one
import { withPrincipal } from "@/lib/http/route";
import { listScheduleEvents } from "@/lib/schedules/service";

export const GET = withPrincipal<{ id: string }>(async (_req, principal, { id }) =>
  Response.json(await listScheduleEvents(principal, id)),
);
