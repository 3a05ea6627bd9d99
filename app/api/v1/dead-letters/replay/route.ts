// POST /api/v1/dead-letters/replay – operators: replay dead jobs by ids or by filter
import { replayDeadLetters } from "@/lib/jobs/dead-letters";
import { readJson, withPrincipal } from "@/lib/http/route";

export const POST = withPrincipal(async (req, principal) =>
  Response.json(await replayDeadLetters(principal, await readJson(req))),
);
