// GET /api/v1/invites?tenant= – invitations (operators: their tenant); POST – invite { email, role?, tenant?, platformAdmin? } → 201 with the link
import { inviteUser, listInvites } from "@/lib/auth/accounts";
import { queryObject, readJson, withPrincipal } from "@/lib/http/route";

export const GET = withPrincipal(async (req, principal) =>
  Response.json({ invites: await listInvites(principal, queryObject(req)) }),
);

export const POST = withPrincipal(async (req, principal) =>
  Response.json(await inviteUser(principal, await readJson(req)), { status: 201 }),
);
