// GET /d/{token} – a download link: no sign-in (rate-limited per address); 404 for a token that never existed, 410 once expired or revoked
// (a browser gets a page saying so, with the same status; API clients get the JSON error)
import { AppError } from "@/lib/errors";
import { openLinkDownload, type LinkProblem } from "@/lib/exports/links";
import { fileResponse } from "@/lib/http/file";
import { linkProblemPage, prefersHtml } from "@/lib/http/link-page";
import { publicRoute } from "@/lib/http/route";

export const dynamic = "force-dynamic";

export const GET = publicRoute<{ token: string }>(
  async (req, { token }) => {
    try {
      return fileResponse(await openLinkDownload(token));
    } catch (err) {
      const reason = err instanceof AppError ? (err.extras.details?.reason as LinkProblem | undefined) : undefined;
      if (reason && err instanceof AppError && prefersHtml(req)) return linkProblemPage(reason, err.status);
      throw err;
    }
  },
  { perAddress: true },
);
