// POST /api/v1/jobs/{id}/cancel – cancel a waiting job at once, or signal a running one; 409 when finished
import { cancelJob } from "@/lib/jobs/actions";
import { withPrincipal } from "@/lib/http/route";

export const POST = withPrincipal<{ id: string }>(async (_req, principal, { id }) =>
  Response.json(await cancelJob(principal, id)),
);
