// GET /api/v1/jobs – the caller's tenant's jobs, newest first, keyset-paginated
import { listJobs } from "@/lib/jobs/queries";
import { queryObject, withPrincipal } from "@/lib/http/route";
import { serveApiDirectly } from "@/lib/http/api-direct";
import { jobOperations } from "@/lib/jobs/openapi";

export const GET = withPrincipal(async (req, principal) => Response.json(await listJobs(principal, queryObject(req))));

// On the server `npm start` runs, requests after the first are answered without Next.js's wrapping (lib/http/api-direct.ts).
serveApiDirectly(jobOperations.list, GET);
