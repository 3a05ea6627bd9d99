// GET /api/v1/events – Server-Sent Events of every job of the caller's tenant (for lists)
import { openTenantEventStream } from "@/lib/events/sse";
import { withPrincipal } from "@/lib/http/route";
import { sseHeaders } from "@/lib/http/sse";

export const dynamic = "force-dynamic";

export const GET = withPrincipal(
  async (req, principal) => new Response(openTenantEventStream(principal, req.signal), { headers: sseHeaders }),
);
