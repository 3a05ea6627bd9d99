/**
 * Conveyor's command line: `npm run cli -- <command> [options]` (`--help` lists them).
 * The commands act on the database directly, as the server's operator (scripts/cli/admin.ts).
 */
const argv = process.argv.slice(2);

const run: Promise<number> = import("./cli/admin").then((m) => m.main(argv));

run.then(
  (code) => process.exit(code),
  (err: Error) => {
    console.error(err.stack ?? err.message);
    process.exit(1);
  },
);
