// DELETE /api/v1/ops/pauses/{id} – resume: the scope's waiting jobs start in their order
import { resumePause } from "@/lib/admission/pauses";
import { withPrincipal } from "@/lib/http/route";

export const DELETE = withPrincipal<{ id: string }>(async (_req, principal, { id }) =>
  Response.json(await resumePause(principal, id)),
);
