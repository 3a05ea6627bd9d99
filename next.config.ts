import type { NextConfig } from "next";

/**
 * Security headers for every response. The Content-Security-Policy (with a
 * per-request nonce) and HSTS are set by proxy.ts.
 */
const nextConfig: NextConfig = {
  // Type-checking and lint run as their own steps (npm run typecheck / lint).
  typescript: { ignoreBuildErrors: true },
  serverExternalPackages: ["pg", "pg-copy-streams", "@prisma/adapter-pg"],
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
        headers: [
          { key: "X-Content-Type-Options", value: "nosniff" },
          { key: "Referrer-Policy", value: "same-origin" },
          { key: "X-Frame-Options", value: "DENY" },
        ],
      },
    ];
  },
};

export default nextConfig;
