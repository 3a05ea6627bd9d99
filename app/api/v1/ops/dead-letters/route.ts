// GET /api/v1/ops/dead-letters?tenant= – the dead-letter queue grouped by type, error class and fingerprint
import { listDeadLetterGroups } from "@/lib/ops/console";
import { queryObject, withPrincipal } from "@/lib/http/route";

export const GET = withPrincipal(async (req, principal) =>
  Response.json({ groups: await listDeadLetterGroups(principal, queryObject(req)) }),
);
