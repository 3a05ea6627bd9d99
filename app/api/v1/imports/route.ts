// POST /api/v1/imports – import a finished upload into the caller's tenant; 202 with the queued job
// GET  /api/v1/imports – the tenant's imports, newest first (?limit=1..100, default 50; ?status=failed…)
import { AppError } from "@/lib/errors";
import { IMPORT_LIST_STATUSES, requestImport, listImports, type ImportListStatus } from "@/lib/imports/service";
import { readJson, withPrincipal } from "@/lib/http/route";

export const POST = withPrincipal(async (req, principal) => {
  const { job, created } = await requestImport(principal, await readJson(req), req.headers.get("idempotency-key"));
  return Response.json(job, {
    status: 202,
    headers: { Location: `/api/v1/imports/${job.id}`, ...(created ? {} : { "Idempotent-Replayed": "true" }) },
  });
});

export const GET = withPrincipal(async (req, principal) => {
  const params = new URL(req.url).searchParams;
  const raw = params.get("limit");
  const limit = raw === null ? 50 : Number(raw);
  const status = params.get("status") || undefined;
  if (status && !(IMPORT_LIST_STATUSES as readonly string[]).includes(status)) {
    const message = `must be one of ${IMPORT_LIST_STATUSES.join(", ")}`;
    throw new AppError("invalid_input", `Invalid input: status: ${message}`, [{ path: "status", message }]);
  }
  const imports = await listImports(principal, Number.isFinite(limit) ? limit : 50, status as ImportListStatus);
  return Response.json({ imports });
});
