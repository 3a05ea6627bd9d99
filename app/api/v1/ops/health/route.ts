// GET /api/v1/ops/health?tenant= – health signals per queue (platform admins) and per queue and tenant, with thresholds and states
import { getHealth } from "@/lib/ops/health";
import { queryObject, withPrincipal } from "@/lib/http/route";

export const GET = withPrincipal(async (req, principal) => Response.json(await getHealth(principal, queryObject(req))));
