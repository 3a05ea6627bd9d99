/**
 * Sending mail (invitations), pluggable: MAIL_TRANSPORT=log (the default; no
 * mail server needed) prints the message on the server's log, and whoever
 * sends an invitation also gets its link on screen and from the CLI;
 * MAIL_TRANSPORT=smtp sends it through SMTP_URL with nodemailer.
 */
import nodemailer from "nodemailer";
import { appUrl, env } from "../env";
import { logger } from "../log";

/**
 * `id`, when given, becomes the message's Message-ID (`<id@host of APP_URL>`): one that stays the
 * same when the same message is sent again (a retry after a crash between the send and its
 * record), so a mail system that drops duplicate Message-IDs shows it once.
 */
export type MailMessage = { to: string; subject: string; text: string; id?: string };

export interface MailTransport {
  readonly name: string;
  send(message: MailMessage): Promise<void>;
}

class LogTransport implements MailTransport {
  readonly name = "log";
  async send(m: MailMessage): Promise<void> {
    // By design (MAIL_TRANSPORT=log is for development): the message, its one-time link included, is in the log.
    logger.info(`[mail] to ${m.to}: ${m.subject}\n${m.text.replace(/^/gm, "  ")}`);
  }
}

class SmtpTransport implements MailTransport {
  readonly name = "smtp";
  private readonly transporter: ReturnType<typeof nodemailer.createTransport>;
  constructor(url: string) {
    this.transporter = nodemailer.createTransport(url);
  }
  async send(m: MailMessage): Promise<void> {
    await this.transporter.sendMail({
      from: env().MAIL_FROM,
      to: m.to,
      subject: m.subject,
      text: m.text,
      ...(m.id ? { messageId: `<${m.id}@${new URL(appUrl()).hostname}>` } : {}),
    });
  }
}

let transport: MailTransport | undefined;

/** The configured transport. */
export function mailTransport(): MailTransport {
  transport ??= env().MAIL_TRANSPORT === "smtp" ? new SmtpTransport(env().SMTP_URL!) : new LogTransport();
  return transport;
}

/** Forgets the transport, so the next use follows the configuration again (tests). */
export function resetMailTransport(): void {
  transport = undefined;
}
