/**
 * What a person sees when a shared download link (GET /d/{token}) opens
 * nothing: a small page in the app's look that says what happened and what to
 * do, with the same status an API client gets (404 unknown, 410 otherwise).
 * Only a request that asks for HTML before JSON (a browser's navigation) gets
 * it; scripts and `curl` keep the JSON error.
 */
import type { LinkProblem } from "../exports/links";

/** The highest q a request's Accept header gives any of `types` (exact matches only, not wildcards). */
function qualityOf(accept: string, types: string[]): number {
  let best = 0;
  for (const range of accept.split(",")) {
    const [type = "", ...params] = range.split(";").map((s) => s.trim().toLowerCase());
    if (!types.includes(type)) continue;
    const q = params.find((p) => p.startsWith("q="));
    const value = q ? Number(q.slice(2)) : 1;
    if (Number.isFinite(value)) best = Math.max(best, value);
  }
  return best;
}

/** True when the request names HTML and does not prefer JSON to it (a browser, not `*\/*` alone). */
export function prefersHtml(req: Request): boolean {
  const accept = req.headers.get("accept") ?? "";
  const html = qualityOf(accept, ["text/html", "application/xhtml+xml"]);
  return html > 0 && html >= qualityOf(accept, ["application/json"]);
}

const pages: Record<LinkProblem, { title: string; what: string; todo: string }> = {
  unknown: {
    title: "This download link does not work",
    what: "No download link has this address. It may have been cut short when it was copied: check that you have all of it.",
    todo: "If it still does not work, ask the person who shared it with you for a new link.",
  },
  revoked: {
    title: "This download link was revoked",
    what: "The person who shared it turned it off, so it no longer opens the file.",
    todo: "If you still need the file, ask them for a new link.",
  },
  expired: {
    title: "This download link has expired",
    what: "Shared links work for a limited time (15 minutes unless the person who shared it chose longer), and this one's time is up.",
    todo: "Ask the person who shared it with you for a new link.",
  },
  file_gone: {
    title: "The file behind this link is gone",
    what: "The export this link points to expired or was deleted, so there is nothing left to download.",
    todo: "Ask the person who shared it to request the export again and send you a new link.",
  },
};

// The app's look (app/globals.css and the sign-in card), inline: this page is not rendered by React.
const style = `
*,*::before,*::after{box-sizing:border-box}
body{margin:0;min-height:100vh;background:#f8fafc;color:#0f172a;-webkit-font-smoothing:antialiased;
font-family:ui-sans-serif,system-ui,sans-serif,"Apple Color Emoji","Segoe UI Emoji";line-height:1.5}
main{max-width:28rem;margin:6rem auto 0;padding:2rem;background:#fff;border:1px solid #e2e8f0;border-radius:.5rem;
box-shadow:0 1px 3px 0 rgb(0 0 0/.1),0 1px 2px -1px rgb(0 0 0/.1)}
@media (max-width:30rem){main{margin:2rem 1rem 0;padding:1.5rem}}
.brand{margin:0 0 .25rem;font-size:.875rem;color:#64748b}
h1{margin:0 0 1rem;font-size:1.5rem;line-height:2rem;font-weight:600}
.what{margin:0;padding:.5rem .75rem;border-radius:.25rem;background:#fffbeb;color:#78350f;font-size:.875rem}
.todo{margin:1rem 0 0;font-size:.875rem}
.more{margin:1.5rem 0 0;font-size:.875rem;color:#475569}
a{color:#4338ca;text-decoration:underline}a:hover{color:#4f46e5}`;

/** The page for a link that opens nothing, answered with `status` (404 or 410). */
export function linkProblemPage(reason: LinkProblem, status: number): Response {
  const p = pages[reason];
  // Every string is ours (no request data), so nothing here needs escaping.
  const html = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${p.title} · Conveyor</title>
<style>${style}</style>
</head>
<body>
<main data-reason="${reason}">
<p class="brand">Conveyor · shared download</p>
<h1>${p.title}</h1>
<p class="what" role="status">${p.what}</p>
<p class="todo">${p.todo}</p>
<p class="more">Have an account here? <a href="/login">Sign in</a> to see your own exports.</p>
</main>
</body>
</html>
`;
  return new Response(html, {
    status,
    headers: {
      "Content-Type": "text/html; charset=utf-8",
      "Cache-Control": "private, no-store",
      // The token is in this page's URL: no Referer carries it to the sign-in page.
      "Referrer-Policy": "no-referrer",
    },
  });
}
