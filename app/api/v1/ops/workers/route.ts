// GET /api/v1/ops/workers – the worker fleet from the registry (platform admins)
import { listWorkers } from "@/lib/ops/console";
import { withPrincipal } from "@/lib/http/route";

export const GET = withPrincipal(async (_req, principal) => Response.json({ workers: await listWorkers(principal) }));
