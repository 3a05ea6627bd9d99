/**
 * `notification_mail`: one e-mail, for one notification (a job of the member's ended) or one
 * dead-letter digest (an operator's window), through the configured mail transport (lib/mail).
 * It is a job of its own, made in the transaction that made its notification, so a mail server
 * that is down or refuses never touches the job the mail is about: the mail retries on its own
 * schedule (10 s, 1 min, 5 min, 30 min, 2 h, 6 h; NOTIFY_RETRY_SCALE), then is dead-lettered.
 * At send time it asks again whether the member still wants it (a preference turned off, an
 * unsubscribe, a membership ended since: no mail). `mailed_at` keeps a re-run from sending twice
 * (a crash between the send and the record may still send twice: at least once; both copies carry
 * the same Message-ID, made from the notification's or digest's id).
 */
import { z } from "zod";
import { appUrl } from "../env";
import { pool } from "../db";
import { RetryableError } from "../jobs/errors";
import { defineTask, type JobContext } from "../jobs/task";
import { mailTransport, type MailMessage } from "../mail";
import { run } from "../sql";
import { jobLink, unsubscribeLink } from "./links";
import { notificationSettings } from "./settings";
import { digestToMail, markDigestMailed, markMailed, notificationToMail } from "./sql/statements";

/** Delays after the 1st, 2nd… failed send, in ms; the 7th failure dead-letters the mail. */
export const MAIL_RETRY_SCHEDULE_MS = [10_000, 60_000, 300_000, 1_800_000, 7_200_000, 21_600_000];

const inputSchema = z.union([
  z.object({ notificationId: z.uuid() }).strict(),
  z.object({ digestId: z.uuid() }).strict(),
]);
type MailInput = z.infer<typeof inputSchema>;
export type MailResult = { sent: boolean; reason?: "gone" | "already sent" | "not wanted" };

const OUTCOME_WORDS = { succeeded: "finished", failed: "failed", cancelled: "was cancelled" } as const;

function footer(kindLabel: string, unsubscribe: string): string {
  return [
    "",
    "--",
    `You get this because e-mail about your ${kindLabel}s is on.`,
    `Turn it off (no sign-in needed): ${unsubscribe}`,
    `All your notification settings: ${appUrl()}/notifications`,
  ].join("\n");
}

async function notificationMail(id: string): Promise<MailResult> {
  const { rows } = await run(pool(), notificationToMail, [id]);
  const n = rows[0];
  if (!n) return { sent: false, reason: "gone" };
  if (n.mailedAt) return { sent: false, reason: "already sent" };
  if (!n.wanted || !n.member) return { sent: false, reason: "not wanted" };
  const words = OUTCOME_WORDS[n.outcome as keyof typeof OUTCOME_WORDS] ?? n.outcome;
  const message: MailMessage = {
    id: `notification.${id}`,
    to: n.email,
    subject: `Your ${n.label} ${words}`,
    text: [
      `Your ${n.label} in ${n.tenantName} ${words}.`,
      ...(n.outcome === "failed" && n.errorMessage ? ["", `Error: ${n.errorMessage}`] : []),
      "",
      `See it: ${jobLink(n.jobId)}`,
      footer(n.label, await unsubscribeLink(pool(), { userId: n.userId, tenantId: n.tenantId, kind: n.kind })),
    ].join("\n"),
  };
  await mailTransport().send(message);
  await run(pool(), markMailed, [id]);
  return { sent: true };
}

type DigestJob = { id: string; type: string; error: string | null; finishedAt: string };

async function digestMail(id: string): Promise<MailResult> {
  const { rows } = await run(pool(), digestToMail, [id]);
  const d = rows[0];
  if (!d) return { sent: false, reason: "gone" };
  if (d.mailedAt) return { sent: false, reason: "already sent" };
  if (!d.wanted || !d.operator) return { sent: false, reason: "not wanted" };
  const jobs = d.jobs as DigestJob[];
  const more = d.total - jobs.length;
  const message: MailMessage = {
    id: `digest.${id}`,
    to: d.email,
    subject: `${d.total} new dead letter${d.total === 1 ? "" : "s"} in ${d.tenantName}`,
    text: [
      `${d.total} job${d.total === 1 ? "" : "s"} of ${d.tenantName} failed for good between ` +
        `${d.windowFrom.toISOString()} and ${d.windowTo.toISOString()}:`,
      "",
      ...jobs.map((j) => `- ${j.type} ${jobLink(j.id)}${j.error ? `\n  ${j.error.slice(0, 200)}` : ""}`),
      ...(more > 0 ? [`- and ${more} more`] : []),
      "",
      `The dead-letter queue: ${appUrl()}/ops/dead-letters`,
      footer(
        "dead-letter digest",
        await unsubscribeLink(pool(), { userId: d.userId, tenantId: d.tenantId, kind: "dead_letters" }),
      ),
    ].join("\n"),
  };
  await mailTransport().send(message);
  await run(pool(), markDigestMailed, [id]);
  return { sent: true };
}

async function sendMail(ctx: JobContext<MailInput>): Promise<MailResult> {
  try {
    return "notificationId" in ctx.input
      ? await notificationMail(ctx.input.notificationId)
      : await digestMail(ctx.input.digestId);
  } catch (err) {
    const delay = MAIL_RETRY_SCHEDULE_MS[Math.min(ctx.job.attempt, MAIL_RETRY_SCHEDULE_MS.length) - 1]!;
    throw new RetryableError(
      `The mail was not sent: ${err instanceof Error ? err.message : String(err)}`,
      delay * notificationSettings().NOTIFY_RETRY_SCALE,
    );
  }
}

export const mailTask = defineTask({
  type: "notification_mail",
  // Bulk: nobody waits on it, and a queue of its own would need a worker pool of its own in every deployment.
  queue: "bulk",
  inputSchema,
  // Seven tries on the schedule above (the budget conveyor_notify_mail gives each mail job).
  retry: { maxAttempts: 7, initialBackoffMs: 10_000, maxBackoffMs: 21_600_000, multiplier: 6, jitter: "full" },
  timeoutMs: 120_000,
  leaseMs: 10_000,
  handler: sendMail,
});
