// POST /api/v1/notifications/unsubscribe – { token } of a mail's unsubscribe link: e-mail for that kind off (no sign-in)
import { publicRoute, readJson } from "@/lib/http/route";
import { unsubscribe } from "@/lib/notifications/service";

export const POST = publicRoute(async (req) => Response.json(await unsubscribe(await readJson(req))), {
  perAddress: true,
});
