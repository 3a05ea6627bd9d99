// POST /api/v1/imports/{id}/errors/links – a short-lived download link to the errors file ({ ttlSeconds? })
import { createImportErrorsLink } from "@/lib/imports/service";
import { readJson, withPrincipal } from "@/lib/http/route";

export const POST = withPrincipal<{ id: string }>(async (req, principal, { id }) =>
  Response.json(await createImportErrorsLink(principal, id, await readJson(req)), { status: 201 }),
);
