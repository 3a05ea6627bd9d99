// GET /api/v1/jobs/{id} – one job with its progress and result
import { getJob } from "@/lib/jobs/queries";
import { withPrincipal } from "@/lib/http/route";

export const GET = withPrincipal<{ id: string }>(async (_req, principal, { id }) =>
  Response.json(await getJob(principal, id)),
);
