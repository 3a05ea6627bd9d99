// POST /api/v1/jobs/{id}/cancel – cancel a waiting job at once, or signal a running one ({ reason? }); 409 when finished
import { cancelJob } from "@/lib/jobs/actions";
import { readOptionalJson, withPrincipal } from "@/lib/http/route";

export const POST = withPrincipal<{ id: string }>(async (req, principal, { id }) =>
  Response.json(await cancelJob(principal, id, await readOptionalJson(req))),
);
