// GET /api/v1/ops/workers – the worker fleet from the registry, and a summary per pool (platform admins)
import { listWorkers } from "@/lib/ops/console";
import { summarizePools } from "@/lib/ops/workers";
import { withPrincipal } from "@/lib/http/route";

export const GET = withPrincipal(async (_req, principal) => {
  const workers = await listWorkers(principal);
  return Response.json({ workers, pools: summarizePools(workers) });
});
