// POST /api/v1/invites/accept – use an invitation: signed in as its invitee { token }, or without a session
// { token, name, password } for a new account; 200 { email } either way (it never tells whether the e-mail has an account)
import { acceptInvite } from "@/lib/auth/accounts";
import { principalFromRequest } from "@/lib/http/principal";
import { publicRoute, readJson } from "@/lib/http/route";

export const POST = publicRoute(
  async (req) => Response.json(await acceptInvite(await readJson(req), await principalFromRequest(req))),
  { perAddress: true },
);
