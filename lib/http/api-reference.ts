/**
 * The interactive API reference's renderer: Scalar's standalone bundle, read
 * from the installed @scalar/api-reference package and served from our own
 * origin (app/docs/api/scalar.js/route.ts) — nothing loads from a CDN, and the
 * page's Content-Security-Policy (proxy.ts) would refuse it anyway.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";

const PACKAGE_DIR = path.join(process.cwd(), "node_modules", "@scalar", "api-reference");

let cached: Promise<{ body: Buffer; version: string }> | undefined;

/** The bundle and the package version it came from, read once per process. */
export function scalarBundle(): Promise<{ body: Buffer; version: string }> {
  cached ??= Promise.all([
    readFile(path.join(PACKAGE_DIR, "dist", "browser", "standalone.js")),
    readFile(path.join(PACKAGE_DIR, "package.json"), "utf8").then(
      (p) => (JSON.parse(p) as { version: string }).version,
    ),
  ]).then(([body, version]) => ({ body, version }));
  // A failed read is tried again on the next request, not remembered.
  cached.catch(() => (cached = undefined));
  return cached;
}

/**
 * Scalar's settings for our page: the document at /api/v1/openapi.json, no
 * web fonts, telemetry or hosted AI features (each would call Scalar's servers).
 */
export const scalarConfiguration = {
  url: "/api/v1/openapi.json",
  withDefaultFonts: false,
  telemetry: false,
  agent: { disabled: true },
  mcp: { disabled: true },
  showDeveloperTools: "never",
  persistAuth: false,
  hideClientButton: false,
  defaultOpenFirstTag: true,
  operationTitleSource: "summary",
} as const;
