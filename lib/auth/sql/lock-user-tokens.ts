/**
 * Serialises the creation of one user's API tokens until the transaction
 * ends, so the cap counted after it (count-user-tokens.ts) cannot be passed
 * by concurrent creates.
 */
import type { Prisma } from "../../db";

export async function lockUserTokens(tx: Prisma.TransactionClient, userId: string): Promise<void> {
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext('conveyor_tokens'), hashtext(${userId}::text))`;
}
