// GET /api/v1/jobs/{id}/parts – a job's child jobs (a split export's parts) with their status and progress
import { getJobParts } from "@/lib/jobs/queries";
import { withPrincipal } from "@/lib/http/route";

export const GET = withPrincipal<{ id: string }>(async (_req, principal, { id }) =>
  Response.json({ parts: await getJobParts(principal, id) }),
);
