// GET /api/v1/schedules – the tenant's schedules (a platform admin: all, ?tenant=<slug>)
// POST /api/v1/schedules – create one { name, cron, timezone?, task, input, missedRunPolicy?, overlapPolicy?,
//   catchupWindowSeconds?, maxCatchup?, startAt?, endAt?, paused? }; 201 with the schedule and its next runs
import { queryObject, readJson, withPrincipal } from "@/lib/http/route";
import { createSchedule, listSchedules } from "@/lib/schedules/service";

export const GET = withPrincipal(async (req, principal) =>
  Response.json(await listSchedules(principal, queryObject(req))),
);

export const POST = withPrincipal(async (req, principal) => {
  const schedule = await createSchedule(principal, await readJson(req));
  return Response.json(schedule, { status: 201, headers: { Location: `/api/v1/schedules/${schedule.id}` } });
});
