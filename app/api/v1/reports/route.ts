// POST /api/v1/reports – request a report of the caller's tenant's jobs in a window; 202 with the queued job
import { readJson, withPrincipal } from "@/lib/http/route";
import { requestReport } from "@/lib/reports/service";

export const POST = withPrincipal(async (req, principal) => {
  const job = await requestReport(principal, await readJson(req));
  return Response.json(job, { status: 202, headers: { Location: `/api/v1/reports/${job.id}` } });
});
