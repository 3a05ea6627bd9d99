// GET /api/v1/reports/{id}/download – a report's file (JSON or CSV)
import { fileResponse } from "@/lib/http/file";
import { withPrincipal } from "@/lib/http/route";
import { openReportDownload } from "@/lib/reports/service";

export const GET = withPrincipal<{ id: string }>(async (_req, principal, { id }) =>
  fileResponse(await openReportDownload(principal, id)),
);
