import type { Metadata } from "next";
import { connection } from "next/server";
import type { ReactNode } from "react";
import { Providers } from "@/components/providers";
import "./globals.css";

export const metadata: Metadata = {
  title: { default: "Conveyor", template: "%s · Conveyor" },
  description: "Long-running work on Postgres",
};

export default async function RootLayout({ children }: { children: ReactNode }) {
  // Rendered per request: Next.js puts the request's CSP nonce (proxy.ts) on its scripts.
  await connection();
  return (
    <html lang="en">
      <body className="min-h-screen font-sans">
        <Providers>{children}</Providers>
      </body>
    </html>
  );
}
