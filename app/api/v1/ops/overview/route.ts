// GET /api/v1/ops/overview?tenant=&queue=&type= – counts per queue and type, throughput, failure rate, runtime, charts
import { getOverview } from "@/lib/ops/stats";
import { queryObject, withPrincipal } from "@/lib/http/route";

export const GET = withPrincipal(async (req, principal) =>
  Response.json(await getOverview(principal, queryObject(req))),
);
