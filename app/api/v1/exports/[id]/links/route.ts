// GET  /api/v1/exports/{id}/links – the export's download links, with their download counts
// POST /api/v1/exports/{id}/links – a new short-lived download link ({ ttlSeconds }, 15 minutes by default)
import { createExportLink, listExportLinks } from "@/lib/exports/links";
import { readOptionalJson, withPrincipal } from "@/lib/http/route";

export const GET = withPrincipal<{ id: string }>(async (_req, principal, { id }) =>
  Response.json({ links: await listExportLinks(principal, id) }),
);

export const POST = withPrincipal<{ id: string }>(async (req, principal, { id }) =>
  Response.json(await createExportLink(principal, id, await readOptionalJson(req)), { status: 201 }),
);
