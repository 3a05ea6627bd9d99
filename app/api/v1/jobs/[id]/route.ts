// GET /api/v1/jobs/{id} – one job with its progress and result
import { getJob } from "@/lib/jobs/queries";
import { withPrincipal } from "@/lib/http/route";
import { serveApiDirectly } from "@/lib/http/api-direct";
import { jobOperations } from "@/lib/jobs/openapi";

export const GET = withPrincipal<{ id: string }>(async (_req, principal, { id }) =>
  Response.json(await getJob(principal, id)),
);

// On the server `npm start` runs, requests after the first are answered without Next.js's wrapping (lib/http/api-direct.ts).
serveApiDirectly(jobOperations.get, GET);
