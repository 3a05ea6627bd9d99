// GET /api/v1/ops/audit?tenant=&action=&actor=&target=&from=&to=&cursor=&limit= – the audit log, newest first
import { listAudit } from "@/lib/ops/console";
import { queryObject, withPrincipal } from "@/lib/http/route";

export const GET = withPrincipal(async (req, principal) => Response.json(await listAudit(principal, queryObject(req))));
