// GET /api/v1/ops/queues – per queue: waiting, admitted, running, pauses, caps, per-tenant counts
import { getQueues } from "@/lib/admission/queues";
import { withPrincipal } from "@/lib/http/route";

export const GET = withPrincipal(async (_req, principal) => Response.json(await getQueues(principal)));
