// POST /api/v1/ops/jobs/actions – cancel, replay, discard or retry_now on ids and/or a filter → matched and affected;
// with `dryRun: true`, how many match and the ids the action applies to, changing nothing
import { planJobAction, runJobAction } from "@/lib/ops/jobs";
import { readJson, withPrincipal } from "@/lib/http/route";

export const POST = withPrincipal(async (req, principal) => {
  const body = await readJson(req);
  const dryRun = typeof body === "object" && body !== null && (body as { dryRun?: unknown }).dryRun === true;
  return Response.json(dryRun ? await planJobAction(principal, body) : await runJobAction(principal, body));
});
