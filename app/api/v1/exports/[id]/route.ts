// DELETE /api/v1/exports/{id} – delete an export's files before they expire (the job shows expired)
import { deleteExport } from "@/lib/exports/links";
import { withPrincipal } from "@/lib/http/route";

export const DELETE = withPrincipal<{ id: string }>(async (_req, principal, { id }) => {
  await deleteExport(principal, id);
  return new Response(null, { status: 204 });
});
