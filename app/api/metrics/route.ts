// GET /api/metrics – Prometheus exposition; a platform admin (session or token) or `Authorization: Bearer $METRICS_TOKEN`
import { principalFromRequest } from "@/lib/http/principal";
import { publicRoute } from "@/lib/http/route";
import { authorizeMetrics, renderMetrics } from "@/lib/ops/metrics";

export const GET = publicRoute(async (req) => {
  const bearer = /^Bearer\s+(\S+)$/i.exec(req.headers.get("authorization") ?? "")?.[1] ?? null;
  // The metrics token is not an API token: look it up as one only if it looks like one.
  const principal = bearer && !bearer.startsWith("cvy_") ? null : await principalFromRequest(req);
  authorizeMetrics(principal, bearer);
  const { body, contentType } = await renderMetrics();
  return new Response(body, { headers: { "Content-Type": contentType, "Cache-Control": "no-store" } });
});
