// GET /api/v1/jobs/{id}/history – every attempt (worker, times, outcome, error) and the status timeline
import { getJobHistory } from "@/lib/jobs/history";
import { withPrincipal } from "@/lib/http/route";

export const GET = withPrincipal<{ id: string }>(async (_req, principal, { id }) =>
  Response.json(await getJobHistory(principal, id)),
);
