// POST /api/v1/imports – import a finished upload into the caller's tenant; 202 with the queued job
// GET  /api/v1/imports – the tenant's imports, newest first (?limit=1..100, default 50)
import { requestImport, listImports } from "@/lib/imports/service";
import { readJson, withPrincipal } from "@/lib/http/route";

export const POST = withPrincipal(async (req, principal) => {
  const { job, created } = await requestImport(principal, await readJson(req), req.headers.get("idempotency-key"));
  return Response.json(job, {
    status: 202,
    headers: { Location: `/api/v1/imports/${job.id}`, ...(created ? {} : { "Idempotent-Replayed": "true" }) },
  });
});

export const GET = withPrincipal(async (req, principal) => {
  const raw = new URL(req.url).searchParams.get("limit");
  const limit = raw === null ? 50 : Number(raw);
  return Response.json({ imports: await listImports(principal, Number.isFinite(limit) ? limit : 50) });
});
