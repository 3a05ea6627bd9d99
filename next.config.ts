import type { NextConfig } from "next";
import { securityHeaders } from "./lib/http/security-headers";

/**
 * Security headers for every response. The Content-Security-Policy (with a
 * per-request nonce) and HSTS are set by proxy.ts.
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
        headers: Object.entries(securityHeaders).map(([key, value]) => ({ key, value })),
      },
    ];
  },
};

export default nextConfig;
