// GET /api/v1/schedules/{id}/runs – its runs (jobs with scheduledFor), newest first; ?cursor=&limit=
import { queryObject, withPrincipal } from "@/lib/http/route";
import { listScheduleRuns } from "@/lib/schedules/service";

export const GET = withPrincipal<{ id: string }>(async (req, principal, { id }) =>
  Response.json(await listScheduleRuns(principal, id, queryObject(req))),
);
