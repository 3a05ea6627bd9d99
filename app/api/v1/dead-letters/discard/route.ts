// POST /api/v1/dead-letters/discard – operators: remove dead jobs from the queue by ids or by filter
import { discardDeadLetters } from "@/lib/jobs/dead-letters";
import { readJson, withPrincipal } from "@/lib/http/route";

export const POST = withPrincipal(async (req, principal) =>
  Response.json(await discardDeadLetters(principal, await readJson(req))),
);
