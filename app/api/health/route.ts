// GET /api/health – liveness and database reachability
import { checkDatabase } from "@/lib/health";
import { publicRoute } from "@/lib/http/route";
import { serveApiDirectly } from "@/lib/http/api-direct";
import { systemOperations } from "@/lib/openapi/system";

export const dynamic = "force-dynamic";

export const GET = publicRoute(async () => {
  const ok = await checkDatabase();
  return Response.json({ ok }, { status: ok ? 200 : 503 });
});

// On the server `npm start` runs, probes after the first are answered without Next.js's wrapping (lib/http/api-direct.ts).
serveApiDirectly(systemOperations.health, GET);
