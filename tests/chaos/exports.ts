/**
 * npm run chaos:exports [-- --exports 4 --part-rows 60000 --segment-rows 2000 --export-workers 3 --scale 0.2]
 * Runs the export chaos harness (SIGKILLs mid-file) on a fresh database (on
 * DATABASE_URL's server, or the embedded Postgres); exits non-zero when a check
 * fails. `npm run chaos` runs it too, after the probe chaos.
 */
import { parseArgs } from "node:util";
import { exportChaos, exportChaosOptions } from "./exports-harness";

exportChaos(parseArgs({ options: exportChaosOptions }).values).then(
  (ok) => process.exit(ok ? 0 : 1),
  (err: Error) => {
    console.error(err.stack ?? err.message);
    process.exit(1);
  },
);
