import type { NextConfig } from "next";

const dev = process.env.NODE_ENV !== "production";

/**
 * Content-Security-Policy for every response: only our own origin may serve
 * scripts, styles, images and connections (the SSE streams are same-origin);
 * no plugins, no framing, forms post only here. Next.js's app router inlines
 * its bootstrap scripts, hence 'unsafe-inline' for scripts (job inputs and
 * errors are always rendered as text, never as markup); `next dev` also needs eval.
 */
const csp = [
  "default-src 'self'",
  `script-src 'self' 'unsafe-inline'${dev ? " 'unsafe-eval'" : ""}`,
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self'",
  `connect-src 'self'${dev ? " ws:" : ""}`,
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

const nextConfig: NextConfig = {
  // Type-checking and lint run as their own steps (npm run typecheck / lint).
  typescript: { ignoreBuildErrors: true },
  serverExternalPackages: ["pg", "pg-copy-streams", "@prisma/adapter-pg"],
  poweredByHeader: false,
  async headers() {
    return [
      {
        source: "/:path*",
        headers: [
          { key: "Content-Security-Policy", value: csp },
          { key: "X-Content-Type-Options", value: "nosniff" },
          { key: "Referrer-Policy", value: "same-origin" },
          { key: "X-Frame-Options", value: "DENY" },
        ],
      },
    ];
  },
};

export default nextConfig;
