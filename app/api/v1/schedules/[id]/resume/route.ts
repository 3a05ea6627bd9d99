// POST /api/v1/schedules/{id}/resume – runs again from its next occurrence after now
import { withPrincipal } from "@/lib/http/route";
import { pauseSchedule } from "@/lib/schedules/service";

export const POST = withPrincipal<{ id: string }>(async (_req, principal, { id }) =>
  Response.json(await pauseSchedule(principal, id, false)),
);
