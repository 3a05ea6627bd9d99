// GET /api/v1/ops/jobs/{id} – one job with attempts, timeline, parts and audit entries (input redacted)
import { getOpsJob } from "@/lib/ops/jobs";
import { withPrincipal } from "@/lib/http/route";

export const GET = withPrincipal<{ id: string }>(async (_req, principal, { id }) =>
  Response.json(await getOpsJob(principal, id)),
);
