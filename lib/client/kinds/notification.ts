/**
 * The notifications workload's job kind: its mail jobs (seen in the console and the dead-letter
 * queue, never in a member's lists: they have no owner). The bell itself is a header control
 * (components/notification-bell.tsx), not a navigation entry.
 */
import type { JobKind } from "./types";

type MailInput = { notificationId?: string; digestId?: string };

export const notificationKind: JobKind = {
  name: "notifications",
  types: {
    notification_mail: {
      title: (job) => (((job.input ?? {}) as MailInput).digestId ? "Dead-letter digest e-mail" : "Notification e-mail"),
    },
  },
};
