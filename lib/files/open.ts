/**
 * Opening a stored file for download (an export's, an import's errors file):
 * whether it may be given now (409 before its job has it, 410 once it expired
 * or was deleted), and counting each download, on the file and on the link
 * that led to it.
 */
import type { Readable } from "node:stream";
import { db } from "../db";
import { AppError } from "../errors";
import { storage } from "../storage";

export type ExportDownload = { stream: Readable; size: number; name: string; contentType: string };

type ExportFileRow = Awaited<ReturnType<ReturnType<typeof db>["exportFile"]["findFirstOrThrow"]>>;

/**
 * What an export may give: its file, or 409 while it has none yet, 410 once it
 * expired or was deleted. A failed split export gives its finished parts (partial).
 */
export function downloadableFile(status: string, file: ExportFileRow | undefined): ExportFileRow {
  if (status !== "succeeded" && status !== "expired" && !(status === "failed" && file?.partial)) {
    throw new AppError("conflict", `The export is ${status}; there is nothing to download yet`);
  }
  if (!file || file.deletedAt || file.expiresAt <= new Date() || status === "expired") {
    throw new AppError("gone", "This export has expired or was deleted");
  }
  return file;
}

/** Opens a file for download and counts it, on the file and on the link that led to it. */
export async function openAndCount(file: ExportFileRow, linkId?: string): Promise<ExportDownload> {
  const opened = await storage().open(file.storageKey);
  if (!opened) throw new AppError("gone", "This export's file is no longer stored");
  try {
    await db().$transaction([
      db().exportFile.update({ where: { id: file.id }, data: { downloadCount: { increment: 1 } } }),
      ...(linkId ? [db().exportLink.update({ where: { id: linkId }, data: { downloadCount: { increment: 1 } } })] : []),
    ]);
  } catch (err) {
    opened.stream.destroy();
    throw err;
  }
  return { stream: opened.stream, size: opened.size, name: file.name, contentType: file.contentType };
}
