// GET /api/v1/exports/{id}/download – stream an export's file
import { openExportDownload } from "@/lib/exports/service";
import { fileResponse } from "@/lib/http/file";
import { withPrincipal } from "@/lib/http/route";

export const GET = withPrincipal<{ id: string }>(async (_req, principal, { id }) =>
  fileResponse(await openExportDownload(principal, id)),
);
