// GET /api/v1/notifications – the caller's notifications, newest first (?limit=, ?cursor=), and their unread count
import { queryObject, withPrincipal } from "@/lib/http/route";
import { listNotifications } from "@/lib/notifications/service";

export const GET = withPrincipal(async (req, principal) =>
  Response.json(await listNotifications(principal, queryObject(req))),
);
