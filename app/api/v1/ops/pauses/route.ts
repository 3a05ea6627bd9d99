// GET /api/v1/ops/pauses – active pauses (?state=all adds resumed ones); POST – pause a scope → 201
import { createPause, listPauses } from "@/lib/admission/pauses";
import { queryObject, readJson, withPrincipal } from "@/lib/http/route";

export const GET = withPrincipal(async (req, principal) =>
  Response.json({ pauses: await listPauses(principal, queryObject(req)) }),
);

export const POST = withPrincipal(async (req, principal) => {
  const pause = await createPause(principal, await readJson(req));
  return Response.json(pause, { status: 201, headers: { Location: `/api/v1/ops/pauses/${pause.id}` } });
});
