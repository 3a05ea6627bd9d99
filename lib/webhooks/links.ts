/**
 * Download links in a message, made when it is sent: the stored message names
 * its files by id (lib/events/outbox.ts), and each request gets links of its
 * own, so a leaked `webhook_messages` row opens no file, and a retry or a
 * replay days later still carries links that work.
 */
import type { SqlClient } from "../db";
import { appUrl } from "../env";
import { mintFileLink } from "../files/links";

/** How long the links a request carries stay valid (never past the file's expiry), in seconds. */
export const WEBHOOK_LINK_TTL_SECONDS = 24 * 3600;

type FileRef = { fileId?: unknown; [k: string]: unknown };

/**
 * The body to send for a stored message: the stored bytes themselves when it
 * names no file; otherwise each file's `fileId` replaced by a new `downloadUrl`
 * and its `expiresAt` (null when the file is gone), and `data.downloadUrl` the first's.
 */
export async function bodyToSend(client: SqlClient, stored: string): Promise<string> {
  const message = JSON.parse(stored) as { data?: { files?: unknown; downloadUrl?: unknown } };
  const files = message.data?.files;
  if (!Array.isArray(files) || !files.some((f: FileRef) => typeof f?.fileId === "string")) return stored;
  const sent = [];
  for (const f of files as FileRef[]) {
    if (typeof f?.fileId !== "string") {
      sent.push(f);
      continue;
    }
    const { fileId, ...rest } = f;
    const link = await mintFileLink(client, fileId, WEBHOOK_LINK_TTL_SECONDS);
    sent.push({
      ...rest,
      downloadUrl: link ? `${appUrl()}/d/${link.token}` : null,
      expiresAt: link ? link.expiresAt.toISOString() : null,
    });
  }
  const data = { ...message.data, files: sent };
  if ("downloadUrl" in data) data.downloadUrl = (sent[0] as { downloadUrl?: unknown } | undefined)?.downloadUrl ?? null;
  return JSON.stringify({ ...message, data });
}
