// POST /api/v1/uploads, HEAD|PATCH|DELETE /api/v1/uploads/{id}, OPTIONS – resumable uploads (tus 1.0);
// GET /api/v1/uploads – the tenant's uploads; GET /api/v1/uploads/{id} – one of them
// Bodies stream through to the store: proxy.ts leaves this path alone (see its matcher).
import { publicRoute, withPrincipal } from "@/lib/http/route";
import { json } from "@/lib/http/respond";
import { findUpload, listUploads, toUploadDto } from "@/lib/uploads/service";
import { handleTusOptions, handleTusRequest, withTusHeaders } from "@/lib/uploads/tus";

type Params = { path?: string[] };

/** The upload id of the URL (`/api/v1/uploads/{id}`); a deeper path names no upload. */
const idOf = (path: string[] | undefined): string | undefined => (path?.length ? path.join("/") : undefined);

const tus = withTusHeaders(
  withPrincipal<Params>((req, principal, { path }) => handleTusRequest(req, principal, idOf(path))),
);

export const POST = tus;
export const HEAD = tus;
export const PATCH = tus;
export const DELETE = tus;
export const OPTIONS = withTusHeaders(publicRoute<Params>((req) => handleTusOptions(req)));

export const GET = withPrincipal<Params>(async (_req, principal, { path }) => {
  const id = idOf(path);
  if (id === undefined) return json({ uploads: await listUploads(principal) });
  return json(toUploadDto(await findUpload(principal, id)));
});
