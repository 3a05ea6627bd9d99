// GET /api/v1/notifications/preferences – the caller's e-mail choice for each kind
// PUT /api/v1/notifications/preferences – { kind, email }: turn e-mail for one kind on or off
import { readJson, withPrincipal } from "@/lib/http/route";
import { getPreferences, updatePreference } from "@/lib/notifications/service";

export const GET = withPrincipal(async (_req, principal) => Response.json(await getPreferences(principal)));

export const PUT = withPrincipal(async (req, principal) =>
  Response.json(await updatePreference(principal, await readJson(req))),
);
