/**
 * Conveyor's command line: `npm run cli -- <command> [options]` (`--help` lists them).
 *   imports …   through the public HTTP API with an API token, so they work from any machine
 *               that reaches the server (scripts/cli/imports.ts)
 *   the rest    token, user, tenant, schedules, webhooks: on the database directly, as the
 *               server's operator (scripts/cli/admin.ts)
 * Each side is loaded only when asked for: `imports` needs no database.
 */
const argv = process.argv.slice(2);

const run: Promise<number> =
  argv[0] === "imports"
    ? import("./cli/imports").then((m) => m.main(argv.slice(1)))
    : import("./cli/admin").then((m) => m.main(argv));

run.then(
  (code) => process.exit(code),
  (err: Error) => {
    console.error(err.stack ?? err.message);
    process.exit(1);
  },
);
