/**
 * A worker process known to be gone: the process that started it saw it exit
 * (npm start's supervisor, a harness). Recorded on the registry row of the
 * worker that ran as `pid` on `host` and has not stopped cleanly; the reaper
 * then declares it dead and takes its running attempts back at once
 * (lib/jobs/reaper.ts), with no wait for their leases: a process that has
 * exited runs nothing. The row of a worker that stopped cleanly is left as it is.
 */
import type { SqlClient } from "../../db";
import { run } from "../../sql";
import * as sql from "./statements";

export async function recordWorkerExited(
  client: SqlClient,
  opts: { host: string; pid: number; exit: string },
): Promise<string[]> {
  const { rows } = await run(client, sql.workerExited, [opts.host, opts.pid, opts.exit]);
  return rows.map((r) => r.id);
}
