// POST /api/v1/schedules/{id}/trigger – one run now ({ overlapPolicy? }, default allow); 202 with the run ids
import { readOptionalJson, withPrincipal } from "@/lib/http/route";
import { triggerSchedule } from "@/lib/schedules/service";

export const POST = withPrincipal<{ id: string }>(async (req, principal, { id }) =>
  Response.json(await triggerSchedule(principal, id, await readOptionalJson(req)), { status: 202 }),
);
