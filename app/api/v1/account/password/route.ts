// POST /api/v1/account/password – change one's own password { currentPassword, newPassword } (browser session); 204
import { changePassword } from "@/lib/auth/accounts";
import { readJson, withPrincipal } from "@/lib/http/route";

export const POST = withPrincipal(async (req, principal) => {
  await changePassword(principal, await readJson(req));
  return new Response(null, { status: 204 });
});
