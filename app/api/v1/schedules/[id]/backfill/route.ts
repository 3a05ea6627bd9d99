// POST /api/v1/schedules/{id}/backfill – a run per occurrence in [from, to] ({ from, to, overlapPolicy? }); 202
import { readJson, withPrincipal } from "@/lib/http/route";
import { backfillSchedule } from "@/lib/schedules/service";

export const POST = withPrincipal<{ id: string }>(async (req, principal, { id }) =>
  Response.json(await backfillSchedule(principal, id, await readJson(req)), { status: 202 }),
);
