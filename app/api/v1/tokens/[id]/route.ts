// DELETE /api/v1/tokens/{id} – revoke one of the caller's tokens
import { revokeApiToken } from "@/lib/auth/tokens";
import { parseIdOr404 } from "@/lib/ids";
import { withPrincipal } from "@/lib/http/route";

export const DELETE = withPrincipal<{ id: string }>(async (_req, principal, { id }) => {
  await revokeApiToken(principal, parseIdOr404(id, "Token not found"));
  return new Response(null, { status: 204 });
});
