// POST /api/v1/webhooks/endpoints/{id}/rotate-secret – a new secret (shown once); the old one keeps
// signing, as a second signature, for 24 hours
import { withPrincipal } from "@/lib/http/route";
import { rotateSecret } from "@/lib/webhooks/service";

export const POST = withPrincipal<{ id: string }>(async (_req, principal, { id }) =>
  Response.json(await rotateSecret(principal, id)),
);
