/**
 * The import rules of the tree, checked by `npm run lint` (dependency-cruiser).
 * docs/ARCHITECTURE.md, "The house", says why each exists.
 *
 * The folders of lib/ form layers; a folder may import its own layer and those
 * below it, never above:
 *   base       lib/*.ts (env, log, db, errors, ids, validation, audit, maintenance, health), lib/generated
 *   below the engine: lib/runtime (services, the notifier), lib/auth, lib/tenants, lib/storage, lib/files (stored files: records, links, downloads), lib/events, then lib/uploads (it uses auth, tenants)
 *   engine     lib/jobs (lib/jobs/sql below it), then lib/admission
 *   views      lib/sse, lib/ops
 *   workloads  every other folder of lib/ (exports, imports, probe, schedules, webhooks, reports…):
 *              a new workload needs no edit here
 *   the list   lib/workloads
 *   edges      lib/http (app only), lib/client (browser), lib/openapi (the API's description)
 * On top of the layers: no cycle between files, and none between folders.
 */
/** @type {import('dependency-cruiser').IConfiguration} */
/** The folders of lib/ that are not workloads: the base, below the engine, the engine, views, the list and the edges. */
const NOT_WORKLOADS = [
  "generated",
  "runtime",
  "auth",
  "tenants",
  "storage",
  "files",
  "events",
  "uploads",
  "downstream",
  "mail",
  "jobs",
  "admission",
  "sse",
  "ops",
  "retention",
  "workloads",
  "http",
  "client",
  "openapi",
].join("|");
/** Any other folder of lib/ is a workload; `$1` is its name. */
const WORKLOADS = `^lib/(?!(?:${NOT_WORKLOADS})/)([^/]+)/`;
const ENGINE = "^lib/(jobs|admission|events)/";

module.exports = {
  forbidden: [
    {
      name: "no-cycle",
      severity: "error",
      comment: "A file never reaches itself through its imports (type-only imports count too).",
      from: {},
      to: { circular: true },
    },
    {
      name: "no-folder-cycle",
      severity: "error",
      comment: "Two folders never import each other, directly or around a loop: lib/ stays a stack of layers.",
      scope: "folder",
      from: { path: "^lib/" },
      to: { circular: true },
    },
    {
      name: "engine-knows-no-workload",
      severity: "error",
      comment: "The engine (jobs, admission, events) finds task types through the registry; it imports no workload.",
      from: { path: ENGINE },
      to: { path: [WORKLOADS, "^lib/workloads/"] },
    },
    {
      name: "workloads-apart",
      severity: "error",
      comment: "A workload does not import another workload: what they share belongs to the engine or below.",
      from: { path: WORKLOADS },
      to: { path: WORKLOADS, pathNot: "^lib/$1/" },
    },
    {
      name: "base-imports-no-folder",
      severity: "error",
      comment:
        "lib/*.ts is the base layer: configuration, the database, errors. It imports no folder of lib/ but the generated client.",
      from: { path: "^lib/[^/]+\\.ts$" },
      to: { path: "^lib/[^/]+/", pathNot: "^lib/generated/" },
    },
    {
      name: "below-the-engine",
      severity: "error",
      comment:
        "auth, tenants, storage, files, events and uploads serve the engine and everything above; they import none of it.",
      from: { path: "^lib/(runtime|auth|tenants|storage|files|events|uploads)/" },
      to: { path: ["^lib/(jobs|admission|sse|ops|workloads|http|client)/", WORKLOADS] },
    },
    {
      name: "sql-statements-stand-alone",
      severity: "error",
      comment:
        "A sql/ folder (lib/<module>/sql: one statement a .sql file, its generated statements.ts, the functions that run them) imports the database client, lib/sql.ts and types, never its module.",
      from: { path: "^lib/([^/]+)/sql/" },
      to: {
        path: "^lib/",
        pathNot: ["^lib/db\\.ts$", "^lib/sql\\.ts$", "^lib/jobs/task\\.ts$", "^lib/generated/", "^lib/$1/sql/"],
      },
    },
    {
      name: "lib-not-app",
      severity: "error",
      comment: "app → lib ← worker: lib/ never imports app/, components/ or worker/.",
      from: { path: "^lib/" },
      to: { path: "^(app|components|worker)/" },
    },
    {
      name: "only-edges-above-workloads",
      severity: "error",
      comment: "Only lib/workloads, lib/http and lib/client sit above the workloads.",
      from: { path: "^lib/(jobs|admission|events|sse|ops|auth|tenants|storage|uploads)/" },
      to: { path: ["^lib/workloads/", "^lib/http/", "^lib/client/"] },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: ["^lib/generated/", "^\\.next/", "^node_modules/"] },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { exportsFields: ["exports"], conditionNames: ["import", "require", "node", "default"] },
  },
};
