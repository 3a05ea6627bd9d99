// GET /api/v1/jobs/{id}/events – Server-Sent Events: a snapshot, then progress and status until terminal
import { openJobEventStream } from "@/lib/sse/streams";
import { withPrincipal } from "@/lib/http/route";
import { sseHeaders } from "@/lib/http/sse";

export const dynamic = "force-dynamic";

export const GET = withPrincipal<{ id: string }>(async (req, principal, { id }) => {
  return new Response(await openJobEventStream(principal, id, req.signal), { headers: sseHeaders });
});
