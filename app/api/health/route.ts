// GET /api/health – liveness and database reachability
import { checkDatabase } from "@/lib/health";
import { publicRoute } from "@/lib/http/route";

export const dynamic = "force-dynamic";

export const GET = publicRoute(async () => {
  const ok = await checkDatabase();
  return Response.json({ ok }, { status: ok ? 200 : 503 });
});
