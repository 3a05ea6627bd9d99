// POST /api/v1/notifications/read – mark the caller's notifications read: { ids } or { all: true }
import { readJson, withPrincipal } from "@/lib/http/route";
import { markNotificationsRead } from "@/lib/notifications/service";

export const POST = withPrincipal(async (req, principal) =>
  Response.json(await markNotificationsRead(principal, await readJson(req))),
);
