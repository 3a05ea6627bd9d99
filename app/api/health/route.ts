// GET /api/health – liveness and database reachability
import { checkDatabase } from "@/lib/health";

export const dynamic = "force-dynamic";

export async function GET(): Promise<Response> {
  const ok = await checkDatabase();
  return Response.json({ ok }, { status: ok ? 200 : 503 });
}
