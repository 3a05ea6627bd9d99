// GET /api/v1/webhooks/deliveries – ?job= (required): the deliveries of events about that job, every endpoint's, newest first
import { queryObject, withPrincipal } from "@/lib/http/route";
import { listJobDeliveries } from "@/lib/webhooks/service";

export const GET = withPrincipal(async (req, principal) =>
  Response.json(await listJobDeliveries(principal, queryObject(req))),
);
