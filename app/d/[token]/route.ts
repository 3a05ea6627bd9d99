// GET /d/{token} – a download link: no sign-in; 404 for a token that never existed, 410 once expired or revoked
import { openLinkDownload } from "@/lib/exports/links";
import { fileResponse } from "@/lib/http/file";
import { errorResponse } from "@/lib/http/respond";

export const dynamic = "force-dynamic";

export async function GET(_req: Request, { params }: { params: Promise<{ token: string }> }): Promise<Response> {
  try {
    return fileResponse(await openLinkDownload((await params).token));
  } catch (err) {
    return errorResponse(err);
  }
}
