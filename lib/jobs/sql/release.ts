/**
 * The claim's backstop, for a dispatch that claimed nothing: a waiting job
 * whose cancel request found no attempt to stop ends `cancelled` here; one
 * whose scope was paused after its admission gives its slot back (its place in
 * line is kept) and waits until the pause is lifted.
 */
import type { SqlClient } from "../../db";
import { run } from "../../sql";
import * as sql from "./statements";

export async function releaseUnclaimable(client: SqlClient, jobId: string): Promise<void> {
  await run(client, sql.release, [jobId]);
}
