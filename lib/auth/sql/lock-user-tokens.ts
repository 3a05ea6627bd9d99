/**
 * Serialises the creation of one user's API tokens until the transaction
 * ends, so the cap counted after it (count-user-tokens.ts) cannot be passed
 * by concurrent creates.
 */
import type { Prisma } from "../../db";
import { run } from "../../sql";
import * as sql from "./statements";

export async function lockUserTokens(tx: Prisma.TransactionClient, userId: string): Promise<void> {
  await run(tx, sql.lockUserTokens, [userId]);
}
