// POST /api/v1/ops/jobs/actions – cancel, replay, discard or retry_now on ids or a filter → matched and affected
import { runJobAction } from "@/lib/ops/jobs";
import { readJson, withPrincipal } from "@/lib/http/route";

export const POST = withPrincipal(async (req, principal) =>
  Response.json(await runJobAction(principal, await readJson(req))),
);
