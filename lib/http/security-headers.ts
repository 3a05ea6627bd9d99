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
