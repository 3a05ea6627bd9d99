// GET /api/v1/jobs – the caller's tenant's jobs, newest first, keyset-paginated
import { listJobs } from "@/lib/jobs/queries";
import { queryObject, withPrincipal } from "@/lib/http/route";

export const GET = withPrincipal(async (req, principal) => Response.json(await listJobs(principal, queryObject(req))));
