import type { NextConfig } from "next";

const nextConfig: NextConfig = {
  // Type-checking and lint run as their own steps (npm run typecheck / lint).
  typescript: { ignoreBuildErrors: true },
  serverExternalPackages: ["pg", "pg-copy-streams", "@prisma/adapter-pg"],
  poweredByHeader: false,
};

export default nextConfig;
