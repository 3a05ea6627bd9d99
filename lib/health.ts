import { db } from "./db";

/** True when the database answers a trivial query. */
export async function checkDatabase(): Promise<boolean> {
  try {
    await db().$queryRaw`SELECT 1`;
    return true;
  } catch {
    return false;
  }
}
