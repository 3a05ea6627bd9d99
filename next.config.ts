import type { NextConfig } from "next";

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
  serverExternalPackages: ["pg", "pg-copy-streams", "@prisma/adapter-pg"],
  poweredByHeader: false,
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
