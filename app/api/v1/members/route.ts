// GET /api/v1/members?tenant= – the people of a tenant and their roles (operators: their own)
import { listMembers } from "@/lib/auth/accounts";
import { queryObject, withPrincipal } from "@/lib/http/route";

export const GET = withPrincipal(async (req, principal) =>
  Response.json({ members: await listMembers(principal, queryObject(req)) }),
);
