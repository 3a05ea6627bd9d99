// GET /api/v1/ops/stuck?tenant=&heartbeatSeconds=&queuedMinutes=&attempts= – jobs that need a look, with a suggested action
import { listStuckJobs } from "@/lib/ops/console";
import { queryObject, withPrincipal } from "@/lib/http/route";

export const GET = withPrincipal(async (req, principal) =>
  Response.json({ jobs: await listStuckJobs(principal, queryObject(req)) }),
);
