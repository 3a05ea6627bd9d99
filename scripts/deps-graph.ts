// npm run deps:graph [-- --check] – draw lib/'s folders as layers and the imports between them into docs/ARCHITECTURE.md
//
// dependency-cruiser (with the project's .dependency-cruiser.cjs, so it resolves exactly as `npm run lint` does)
// lists every import of lib/; this script folds the files into their folder (lib/<folder>/…, and lib/*.ts as the
// base layer), groups the folders into the layers .dependency-cruiser.cjs names, and writes a Mermaid flowchart
// between the `<!-- deps:graph -->` and `<!-- /deps:graph -->` markers of docs/ARCHITECTURE.md.
// A solid arrow is at least one import of a value; a dotted one means every import between the two is type-only.
// Arrows into the base layer are left out (nearly every folder has one); the diagram's note names the folders
// that do without it. With --check nothing is written: it exits 1 when the committed diagram differs.
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

const ROOT = path.resolve(__dirname, "..");
const DOC = "docs/ARCHITECTURE.md";
const OPEN = "<!-- deps:graph -->";
const CLOSE = "<!-- /deps:graph -->";
const BASE = "lib/*.ts";

// The layers, bottom to top, as .dependency-cruiser.cjs's header and docs/ARCHITECTURE.md "The house" name them.
// A folder not listed here is still drawn, in "not placed", so the diagram never hides a folder.
const LAYERS: { name: string; folders: string[] }[] = [
  { name: "base", folders: [BASE] },
  {
    name: "below the engine",
    folders: ["runtime", "mail", "auth", "tenants", "storage", "files", "events", "downstream", "uploads"],
  },
  { name: "engine", folders: ["jobs", "admission", "retention"] },
  { name: "views", folders: ["sse", "ops"] },
  // Every other folder is a workload (as .dependency-cruiser.cjs has it): a new one needs no edit here.
  { name: "workloads", folders: [] },
  { name: "the list", folders: ["workloads"] },
  { name: "edges", folders: ["http", "client", "openapi"] },
];

interface Cruised {
  modules: { source: string; dependencies: { resolved: string; dependencyTypes: string[] }[] }[];
}

/** lib/jobs/sql/claim.ts → "jobs"; lib/env.ts → "lib/*.ts"; anything outside lib/ (or generated) → null. */
function folderOf(file: string): string | null {
  if (file.startsWith("lib/generated/")) return null;
  const inFolder = /^lib\/([^/]+)\//.exec(file);
  if (inFolder) return inFolder[1]!;
  return /^lib\/[^/]+$/.test(file) ? BASE : null;
}

function cruise(): Cruised {
  const bin = path.join(ROOT, "node_modules", ".bin", "depcruise");
  const run = spawnSync(
    bin,
    [
      "lib",
      "--config",
      ".dependency-cruiser.cjs",
      "--output-type",
      "json",
      "--exclude",
      "^(tests|bench)/|\\.(test|spec|bench)\\.tsx?$",
    ],
    { cwd: ROOT, encoding: "utf8", maxBuffer: 256 * 1024 * 1024 },
  );
  if (run.error) throw run.error;
  // depcruise exits non-zero when a rule is broken; the graph is still drawn (breaking rules is lint's business).
  try {
    return JSON.parse(run.stdout) as Cruised;
  } catch {
    throw new Error(`depcruise gave no JSON (exit ${run.status}): ${run.stderr.trim()}`);
  }
}

const id = (folder: string): string => (folder === BASE ? "base" : `f_${folder.replace(/[^A-Za-z0-9]/g, "_")}`);
const label = (folder: string): string => (folder === BASE ? BASE : `${folder}/`);

function mermaid(cruised: Cruised): string {
  const folders = new Set<string>();
  // "from→to" → whether some import between them carries a value (not type-only)
  const edges = new Map<string, boolean>();
  for (const mod of cruised.modules) {
    const from = folderOf(mod.source);
    if (!from) continue;
    folders.add(from);
    for (const dep of mod.dependencies) {
      const to = folderOf(dep.resolved);
      if (!to || to === from) continue;
      folders.add(to);
      const key = `${from}→${to}`;
      const value = !dep.dependencyTypes.some((t) => t === "type-only" || t === "type-import");
      edges.set(key, (edges.get(key) ?? false) || value);
    }
  }

  const placed = new Set(LAYERS.flatMap((l) => l.folders));
  const workloads = [...folders].filter((f) => !placed.has(f)).sort();
  const layers = LAYERS.map((l) => ({
    ...l,
    folders: (l.name === "workloads" ? workloads : l.folders).filter((f) => folders.has(f)),
  }));

  const lines = ["flowchart BT"];
  layers.forEach((layer, i) => {
    if (layer.folders.length === 0) return;
    lines.push(`  subgraph L${i}["${layer.name}"]`, "    direction LR");
    for (const f of layer.folders) lines.push(`    ${id(f)}["${label(f)}"]`);
    lines.push("  end");
  });
  const withoutBase = [...folders]
    .filter((f) => f !== BASE && !edges.has(`${f}→${BASE}`))
    .sort()
    .map((f) => `\`${label(f)}\``);
  for (const [key, value] of [...edges].sort(([a], [b]) => a.localeCompare(b))) {
    const [from, to] = key.split("→") as [string, string];
    if (to === BASE) continue;
    lines.push(`  ${id(from)} ${value ? "-->" : "-.->"} ${id(to)}`);
  }
  const note =
    `Arrows into \`lib/*.ts\` are left out: every folder imports it` +
    (withoutBase.length ? ` but ${withoutBase.join(", ")}` : "") +
    ". A dotted arrow: type-only imports.";
  return ["```mermaid", ...lines, "```", "", note].join("\n");
}

function main(): void {
  const check = process.argv.includes("--check");
  const file = path.join(ROOT, DOC);
  const doc = readFileSync(file, "utf8");
  const start = doc.indexOf(OPEN);
  const end = doc.indexOf(CLOSE);
  if (start < 0 || end < start) {
    console.error(`[deps:graph] ${DOC} has no ${OPEN} … ${CLOSE} markers`);
    process.exit(1);
  }
  const block = `${OPEN}\n\n<!-- written by \`npm run deps:graph\`; do not edit by hand -->\n\n${mermaid(cruise())}\n\n`;
  const next = doc.slice(0, start) + block + doc.slice(end);
  if (next === doc) {
    console.log(`[deps:graph] ${DOC} is up to date`);
    return;
  }
  if (check) {
    console.error(`[deps:graph] the diagram in ${DOC} is stale: run \`npm run deps:graph\``);
    process.exit(1);
  }
  writeFileSync(file, next);
  console.log(`[deps:graph] wrote the diagram into ${DOC}`);
}

main();
