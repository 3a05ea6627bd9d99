// POST /api/v1/schedules/{id}/pause – no runs until resumed (what falls due meanwhile is not run later)
import { withPrincipal } from "@/lib/http/route";
import { pauseSchedule } from "@/lib/schedules/service";

export const POST = withPrincipal<{ id: string }>(async (_req, principal, { id }) =>
  Response.json(await pauseSchedule(principal, id, true)),
);
