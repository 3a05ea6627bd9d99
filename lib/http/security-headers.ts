/** Security headers for every response (next.config.ts, and the event streams scripts/serve.ts answers itself). */
export const securityHeaders: Record<string, string> = {
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "same-origin",
  "X-Frame-Options": "DENY",
};

/** HSTS, in production (proxy.ts sets it on what Next.js serves). */
export const HSTS = "max-age=63072000; includeSubDomains";
