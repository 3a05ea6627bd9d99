/** Security headers for every response (next.config.ts, and the event streams scripts/serve.ts answers itself). */
export const securityHeaders: Record<string, string> = {
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "same-origin",
  "X-Frame-Options": "DENY",
};

/**
 * The API's Content-Security-Policy (next.config.ts): its answers carry no markup,
 * so nothing may load from them, and nothing may frame them.
 */
export const API_CSP =
  "default-src 'self'; script-src 'none'; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'";

/** HSTS, in production (proxy.ts sets it on pages; next.config.ts on the API). */
export const HSTS = "max-age=63072000; includeSubDomains";

/**
 * The headers next.config.ts gives an API answer, for those scripts/serve.ts answers itself
 * (lib/http/api-direct.ts, lib/http/sse-direct.ts): the security headers, HSTS in production, and
 * the API's Content-Security-Policy unless `csp` is false (an event stream is no document).
 */
export function apiAnswerHeaders(production: boolean, csp = true): Record<string, string> {
  return {
    ...securityHeaders,
    ...(csp ? { "Content-Security-Policy": API_CSP } : {}),
    ...(production ? { "Strict-Transport-Security": HSTS } : {}),
  };
}
