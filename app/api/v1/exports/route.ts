// POST /api/v1/exports – request an export of the caller's tenant data; 202 with the queued job
import { requestExport } from "@/lib/exports/service";
import { readJson, withPrincipal } from "@/lib/http/route";
import { serveApiDirectly } from "@/lib/http/api-direct";
import { exportOperations } from "@/lib/exports/openapi";

export const POST = withPrincipal(async (req, principal) => {
  const { job, created } = await requestExport(principal, await readJson(req), req.headers.get("idempotency-key"));
  return Response.json(job, {
    status: 202,
    headers: { Location: `/api/v1/jobs/${job.id}`, ...(created ? {} : { "Idempotent-Replayed": "true" }) },
  });
});

// On the server `npm start` runs, requests after the first are answered without Next.js's wrapping (lib/http/api-direct.ts).
serveApiDirectly(exportOperations.create, POST);
