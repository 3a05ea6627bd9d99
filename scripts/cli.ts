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
    // One line for the person at the terminal (user output, not a log record); the stack goes to
    // the log, at debug: LOG_LEVEL=debug shows it. (lib/log reads the configuration, which may be
    // what failed: then the line is all there is.)
    console.error(err.message);
    import("@/lib/log")
      .then(({ logger }) => logger.debug({ err }, `[cli] ${argv[0] ?? "(no command)"} failed`))
      .catch(() => {})
      .finally(() => process.exit(1));
  },
);
