/**
 * A user's live API tokens (neither revoked nor expired), in every tenant. Its
 * own statement after the lock (lock-user-tokens.ts): a statement's snapshot is
 * taken when it starts, so only one begun after the lock sees what the lock's
 * previous holder committed.
 */
import type { Prisma } from "../../db";

export async function countUserTokens(tx: Prisma.TransactionClient, userId: string): Promise<number> {
  const [row] = await tx.$queryRaw<{ n: number }[]>`
    SELECT count(*)::int AS n FROM api_tokens
     WHERE user_id = ${userId}::uuid AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())`;
  return row?.n ?? 0;
}
