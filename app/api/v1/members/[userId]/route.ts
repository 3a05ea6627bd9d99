// PATCH /api/v1/members/{userId} – change a member's role { role, tenant? }; DELETE ?tenant= – remove them from the tenant
import { changeMemberRole, removeMember } from "@/lib/auth/accounts";
import { queryObject, readJson, withPrincipal } from "@/lib/http/route";

export const PATCH = withPrincipal<{ userId: string }>(async (req, principal, { userId }) =>
  Response.json(await changeMemberRole(principal, userId, await readJson(req))),
);

export const DELETE = withPrincipal<{ userId: string }>(async (req, principal, { userId }) => {
  await removeMember(principal, userId, queryObject(req).tenant);
  return new Response(null, { status: 204 });
});
