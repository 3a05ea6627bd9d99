// GET /d/{token} – a download link: no sign-in; 404 for a token that never existed, 410 once expired or revoked
import { openLinkDownload } from "@/lib/exports/links";
import { fileResponse } from "@/lib/http/file";
import { publicRoute } from "@/lib/http/route";

export const dynamic = "force-dynamic";

export const GET = publicRoute<{ token: string }>(async (_req, { token }) =>
  fileResponse(await openLinkDownload(token)),
);
