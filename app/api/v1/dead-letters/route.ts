// GET /api/v1/dead-letters – operators: the tenant's failed jobs, filtered, newest first
import { listDeadLetters } from "@/lib/jobs/dead-letters";
import { queryObject, withPrincipal } from "@/lib/http/route";

export const GET = withPrincipal(async (req, principal) =>
  Response.json(await listDeadLetters(principal, queryObject(req))),
);
