// POST /api/v1/invites/accept – use an invitation { token, name?, password } (no sign-in); 200 { email }
import { acceptInvite } from "@/lib/auth/accounts";
import { publicRoute, readJson } from "@/lib/http/route";

export const POST = publicRoute(async (req) => Response.json(await acceptInvite(await readJson(req))), {
  perAddress: true,
});
