import { Readable } from "node:stream";

/** A stored file as an attachment download: length, a safe file name (ASCII and UTF-8), never cached. */
export function fileResponse(file: { stream: Readable; size: number; name: string; contentType: string }): Response {
  const asciiName = file.name.replace(/[^\x20-\x7e]|"/g, "_");
  return new Response(Readable.toWeb(file.stream) as ReadableStream<Uint8Array>, {
    headers: {
      "Content-Type": file.contentType,
      "Content-Length": String(file.size),
      "Content-Disposition": `attachment; filename="${asciiName}"; filename*=UTF-8''${encodeURIComponent(file.name)}`,
      "Cache-Control": "private, no-store",
    },
  });
}
