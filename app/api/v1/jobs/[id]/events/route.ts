// GET /api/v1/jobs/{id}/events – Server-Sent Events: a snapshot, then progress and status until terminal
import { openJobEventStream } from "@/lib/sse/streams";
import { withPrincipal } from "@/lib/http/route";
import { sseHeaders } from "@/lib/http/sse";
import { serveDirectly } from "@/lib/http/sse-direct";
import { jobOperations } from "@/lib/jobs/openapi";

export const dynamic = "force-dynamic";

export const GET = withPrincipal<{ id: string }>(async (req, principal, { id }) => {
  return new Response(await openJobEventStream(principal, id, req.signal), { headers: sseHeaders });
});

// On the server `npm start` runs, streams after the first are answered on the socket (lib/http/sse-direct.ts).
serveDirectly(jobOperations.events, GET);
