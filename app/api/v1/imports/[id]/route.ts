// GET /api/v1/imports/{id} – an import: its job, stages, counts, first bad rows and errors file
import { getImport } from "@/lib/imports/service";
import { withPrincipal } from "@/lib/http/route";

export const GET = withPrincipal<{ id: string }>(async (_req, principal, { id }) =>
  Response.json(await getImport(principal, id)),
);
