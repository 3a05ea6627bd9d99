/**
 * A user's live API tokens (neither revoked nor expired), in every tenant. Its
 * own statement after the lock (lock-user-tokens.ts): a statement's snapshot is
 * taken when it starts, so only one begun after the lock sees what the lock's
 * previous holder committed.
 */
import type { Prisma } from "../../db";
import { run } from "../../sql";
import * as sql from "./statements";

export async function countUserTokens(tx: Prisma.TransactionClient, userId: string): Promise<number> {
  const { rows } = await run(tx, sql.countUserTokens, [userId]);
  return rows[0]?.n ?? 0;
}
