// GET /api/v1/events – Server-Sent Events of every job of the caller's tenant (for lists); resumes from Last-Event-ID
import { openTenantEventStream } from "@/lib/sse/streams";
import { withPrincipal } from "@/lib/http/route";
import { sseHeaders } from "@/lib/http/sse";
import { serveDirectly } from "@/lib/http/sse-direct";
import { jobOperations } from "@/lib/jobs/openapi";

export const dynamic = "force-dynamic";

export const GET = withPrincipal(
  async (req, principal) =>
    new Response(
      // EventSource sends Last-Event-ID on reconnect; `?lastEventId=` lets any client resume.
      await openTenantEventStream(
        principal,
        req.signal,
        req.headers.get("last-event-id") ?? new URL(req.url).searchParams.get("lastEventId"),
      ),
      { headers: sseHeaders },
    ),
);

// On the server `npm start` runs, streams after the first are answered on the socket (lib/http/sse-direct.ts).
serveDirectly(jobOperations.tenantEvents, GET);
