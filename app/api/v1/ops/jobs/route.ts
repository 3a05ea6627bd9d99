// GET /api/v1/ops/jobs?status=&type=&queue=&tenant=&q=&from=&to=&errorClass=&fingerprint=&children=&dead=&cursor=&limit=
// – the jobs explorer
import { listOpsJobs } from "@/lib/ops/jobs";
import { queryObject, withPrincipal } from "@/lib/http/route";

export const GET = withPrincipal(async (req, principal) =>
  Response.json(await listOpsJobs(principal, queryObject(req))),
);
