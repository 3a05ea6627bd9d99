// GET /api/v1/exports/{id}/download – stream an export's file
import { Readable } from "node:stream";
import { openExportDownload } from "@/lib/exports/service";
import { withPrincipal } from "@/lib/http/route";

export const GET = withPrincipal<{ id: string }>(async (_req, principal, { id }) => {
  const file = await openExportDownload(principal, id);
  const asciiName = file.name.replace(/[^\x20-\x7e]|"/g, "_");
  return new Response(Readable.toWeb(file.stream) as ReadableStream<Uint8Array>, {
    headers: {
      "Content-Type": file.contentType,
      "Content-Length": String(file.size),
      "Content-Disposition": `attachment; filename="${asciiName}"; filename*=UTF-8''${encodeURIComponent(file.name)}`,
      "Cache-Control": "private, no-store",
    },
  });
});
