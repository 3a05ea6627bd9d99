// DELETE /api/v1/invites/{id} – revoke a pending invitation (its link stops working)
import { revokeInvite } from "@/lib/auth/accounts";
import { withPrincipal } from "@/lib/http/route";

export const DELETE = withPrincipal<{ id: string }>(async (_req, principal, { id }) => {
  await revokeInvite(principal, id);
  return new Response(null, { status: 204 });
});
