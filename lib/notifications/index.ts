/**
 * The notifications workload (issue 35): a member learns that their export, import or scheduled
 * run ended — in the app (the bell, over the tenant's event stream) and, per their preferences,
 * by e-mail; operators may ask for a digest of new dead letters. It consumes the engine's outbox
 * of job ends (`event_consumers`: `conveyor_notify_consume` writes the notification, and its mail
 * job, in the transaction that ended the job). Its manifest: the mail task (on the engine's bulk
 * queue), the digest service, settings, its job-keyed table (notifications go with their job) and
 * its history (digests, after the job retention).
 */
import { defineWorkload } from "../jobs/task";
import { loop } from "../runtime/service";
import { run } from "../sql";
import { sendDueDigests } from "./digest";
import { notificationsApi } from "./openapi";
import { notificationSettings } from "./settings";
import { pruneDigests } from "./sql/statements";
import { mailTask } from "./task";

export const notificationsWorkload = defineWorkload({
  name: "notifications",
  tasks: [mailTask],
  settings: notificationSettings,
  services: [
    loop({
      // The operators' dead-letter digests: a tick every half window, one digest per window at most.
      name: "notification-digest",
      everyMs: () => Math.max(100, Math.floor(notificationSettings().NOTIFY_DIGEST_WINDOW_MS / 2)),
      async run() {
        const r = await sendDueDigests();
        return r.tenants ? [`digests of ${r.deadLetters} dead letters for ${r.tenants} tenants`] : [];
      },
    }),
  ],
  // A notification is about one job: pruned with it, after the tenant's job retention.
  tables: [{ name: "notifications" }],
  history: [
    {
      name: "notification_digests",
      prune: async (tx, tenantId, cutoff, limit) => (await run(tx, pruneDigests, [tenantId, cutoff, limit])).rowCount,
    },
  ],
  openapi: notificationsApi,
});
