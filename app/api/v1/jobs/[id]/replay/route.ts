// POST /api/v1/jobs/{id}/replay – operators: run a failed or cancelled job again as a new job
import { replayJob } from "@/lib/jobs/actions";
import { withPrincipal } from "@/lib/http/route";

export const POST = withPrincipal<{ id: string }>(async (_req, principal, { id }) => {
  const job = await replayJob(principal, id);
  return Response.json(job, { status: 201, headers: { Location: `/api/v1/jobs/${job.id}` } });
});
