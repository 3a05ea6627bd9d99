// GET /api/v1/imports/{id}/errors – the import's errors file (CSV: line, column, reason, value)
import { openImportErrors } from "@/lib/imports/service";
import { fileResponse } from "@/lib/http/file";
import { withPrincipal } from "@/lib/http/route";

export const GET = withPrincipal<{ id: string }>(async (_req, principal, { id }) =>
  fileResponse(await openImportErrors(principal, id)),
);
