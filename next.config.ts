import type { NextConfig } from "next";
import { API_CSP, HSTS, securityHeaders } from "./lib/http/security-headers";

const asHeaders = (h: Record<string, string>) => Object.entries(h).map(([key, value]) => ({ key, value }));

/**
 * Security headers for every response. Pages' Content-Security-Policy (with a
 * per-request nonce) and HSTS are set by proxy.ts; the API's answers (JSON,
 * files, event streams: no markup, no nonce) get a fixed policy and HSTS here,
 * and the proxy does not run for them (see its matcher).
 */
const nextConfig: NextConfig = {
  // Type-checking and lint run as their own steps (npm run typecheck / lint).
  typescript: { ignoreBuildErrors: true },
  // .next/standalone: the server files and the node_modules they need, traced; the container
  // image serves the app from it (Dockerfile). `npm start` serves .next as before (scripts/serve.ts).
  output: "standalone",
  serverExternalPackages: [
    "pg",
    "pg-copy-streams",
    "@prisma/adapter-pg",
    // Loaded from node_modules, not bundled: one @opentelemetry/api for Next's spans and ours (lib/tracing.ts).
    "@opentelemetry/api",
    "@opentelemetry/context-async-hooks",
    "@opentelemetry/core",
    "@opentelemetry/exporter-trace-otlp-http",
    "@opentelemetry/resources",
    "@opentelemetry/sdk-trace",
    "@opentelemetry/semantic-conventions",
  ],
  poweredByHeader: false,
  // The API reference's renderer is read from node_modules when asked for (lib/http/api-reference.ts):
  // a traced (standalone) build must carry it.
  outputFileTracingIncludes: {
    "/docs/api/scalar.js": [
      "./node_modules/@scalar/api-reference/dist/browser/standalone.js",
      "./node_modules/@scalar/api-reference/package.json",
    ],
  },
  async headers() {
    return [
      {
        source: "/:path*",
        headers: asHeaders(securityHeaders),
      },
      {
        // Not /api/auth (sign-in forms and redirects): the proxy runs there.
        source: "/api/:path((?!auth(?:/|$)).*)",
        headers: asHeaders({
          "Content-Security-Policy": API_CSP,
          ...(process.env.NODE_ENV === "production" ? { "Strict-Transport-Security": HSTS } : {}),
        }),
      },
    ];
  },
};

export default nextConfig;
