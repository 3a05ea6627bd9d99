// PATCH /api/v1/ops/queues/{queue} – a queue's default per-tenant cap and window, fleet-wide (platform admins)
import { updateQueueSettings } from "@/lib/admission/queues";
import { readJson, withPrincipal } from "@/lib/http/route";

export const PATCH = withPrincipal<{ queue: string }>(async (req, principal, { queue }) =>
  Response.json(await updateQueueSettings(principal, queue, await readJson(req))),
);
