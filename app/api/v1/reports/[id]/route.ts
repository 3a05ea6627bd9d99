// GET /api/v1/reports/{id} – a report's job, and once it succeeded its counts and download URL
import { withPrincipal } from "@/lib/http/route";
import { getReport } from "@/lib/reports/service";

export const GET = withPrincipal<{ id: string }>(async (_req, principal, { id }) =>
  Response.json(await getReport(principal, id)),
);
