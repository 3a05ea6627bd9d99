/**
 * Conveyor's command line: `npm run cli -- <command> <subcommand> [options]`
 * (`--help` at every level lists them).
 *   imports …   through the public HTTP API with an API token, so they work from any machine
 *               that reaches the server (scripts/cli/imports.ts); it needs no database
 *   the rest    jobs, dead-letters, pauses, queues, tokens, tenants, users, schedules,
 *               webhooks: on the database, as the user named by --as, through the same
 *               lib/ functions as the API (scripts/cli/program.ts, scripts/cli/commands/)
 * An error is one line on stderr and an exit code by its kind (scripts/cli/run.ts, EXIT).
 */
const argv = process.argv.slice(2);

async function main(): Promise<number> {
  // Its stdout is the result (`--json` output is parsed): log records, the log mail transport's
  // invitations among them, go to stderr.
  (await import("@/lib/log")).logToStderr();
  if (argv[0] === "imports") return (await import("./cli/imports")).main(argv.slice(1));
  const [{ buildProgram }, { describeFailure }] = await Promise.all([import("./cli/program"), import("./cli/run")]);
  try {
    await buildProgram().parseAsync(argv, { from: "user" });
    return 0;
  } catch (err) {
    const { line, code } = describeFailure(err);
    if (line) console.error(line);
    return code;
  }
}

main().then(
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
