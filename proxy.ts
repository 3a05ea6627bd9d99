/**
 * Runs before every request (Next.js 16 "proxy"): a fresh nonce and the
 * Content-Security-Policy that allows only scripts carrying it (no
 * 'unsafe-inline' for scripts; Next.js puts the nonce on its own scripts when
 * it finds it in the request's CSP), HSTS in production, and a 413 for a
 * declared body over MAX_BODY_BYTES before anything reads it (route handlers
 * also stop reading at the limit when no length is declared: lib/http/route.ts).
 * It does not run for the API outside /api/auth (see the matcher).
 */
import { NextResponse, type NextRequest } from "next/server";
import { env } from "@/lib/env";
import { HSTS } from "@/lib/http/security-headers";

function contentSecurityPolicy(nonce: string, dev: boolean): string {
  return [
    "default-src 'self'",
    `script-src 'self' 'nonce-${nonce}' 'strict-dynamic'${dev ? " 'unsafe-eval'" : ""}`,
    // Style attributes (charts, progress widths) need inline styles; they cannot run code.
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self'",
    `connect-src 'self'${dev ? " ws:" : ""}`,
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join("; ");
}

export function proxy(request: NextRequest): NextResponse {
  const max = env().MAX_BODY_BYTES;
  const declared = Number(request.headers.get("content-length") ?? 0);
  if (declared > max) {
    return NextResponse.json(
      {
        error: {
          code: "payload_too_large",
          message: `Invalid input: body: must be at most ${max} bytes`,
          fields: [{ path: "(body)", message: `must be at most ${max} bytes` }],
        },
      },
      { status: 413 },
    );
  }
  const dev = env().NODE_ENV === "development";
  const nonce = Buffer.from(crypto.getRandomValues(new Uint8Array(16))).toString("base64");
  const csp = contentSecurityPolicy(nonce, dev);
  const requestHeaders = new Headers(request.headers);
  requestHeaders.set("x-nonce", nonce);
  requestHeaders.set("Content-Security-Policy", csp);
  const response = NextResponse.next({ request: { headers: requestHeaders } });
  response.headers.set("Content-Security-Policy", csp);
  if (env().NODE_ENV === "production") {
    response.headers.set("Strict-Transport-Security", HSTS);
  }
  return response;
}

export const config = {
  // Not the build's static files: they carry no markup. Not the uploads (tus): they carry no markup
  // either, and Next.js clones the body of every request the proxy runs on, holding up to
  // proxyClientMaxBodySize (10 MB) in memory and silently cutting the body there (a 50 MB PATCH
  // arrived as its first 10 MB and answered 204). Excluded, their bodies stream to the store.
  // Nor the rest of the API but /api/auth: running it costs every request a body clone and
  // a millisecond or two (docs/BENCHMARKS.md, "Accepting a job"); the API's answers get their
  // CSP and HSTS from next.config.ts, and its handlers refuse an oversized body themselves
  // (lib/http/route.ts readBodyText: a declared length at once, an undeclared one at the limit).
  matcher: [{ source: "/((?!_next/static|_next/image|favicon.ico|api/(?!auth(?:/|$))).*)" }],
};
