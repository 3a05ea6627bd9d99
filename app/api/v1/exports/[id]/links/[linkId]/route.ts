// DELETE /api/v1/exports/{id}/links/{linkId} – revoke a download link at once
import { revokeExportLink } from "@/lib/exports/links";
import { withPrincipal } from "@/lib/http/route";

export const DELETE = withPrincipal<{ id: string; linkId: string }>(async (_req, principal, { id, linkId }) => {
  await revokeExportLink(principal, id, linkId);
  return new Response(null, { status: 204 });
});
