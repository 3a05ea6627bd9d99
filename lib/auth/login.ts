/**
 * Signing in with an e-mail and a password, throttled (./throttle.ts): the try
 * is counted before the password is checked, so a waiting key (or a concurrent
 * burst past the limit) is refused without checking it; a success gives the
 * count back. A hash made with older parameters is replaced on success. Takes
 * the same time whether or not the e-mail exists.
 */
import { db } from "../db";
import { hashPassword, needsRehash, verifyPassword } from "./password";
import { reserveSignInTry, signInFailed, signInSucceeded, signInWait } from "./throttle";

export type SignInResult =
  | { ok: true; user: { id: string; email: string; name: string; passwordChangedAt: Date | null } }
  | { ok: false; reason: "invalid" }
  | { ok: false; reason: "throttled"; waitSeconds: number };

export async function signInWithPassword(email: string, password: string, address: string): Promise<SignInResult> {
  const normalized = email.trim().toLowerCase();
  const wait = await signInWait(normalized, address);
  if (wait > 0) return { ok: false, reason: "throttled", waitSeconds: wait };
  const reserved = await reserveSignInTry(normalized, address);
  if (!reserved.ok) return { ok: false, reason: "throttled", waitSeconds: reserved.waitSeconds };
  const user = await db().user.findUnique({ where: { email: normalized } });
  // A fixed dummy hash keeps timing equal for unknown e-mails.
  const ok = await verifyPassword(password, user?.passwordHash ?? DUMMY_HASH);
  if (!user || !ok) {
    const waitNow = await signInFailed(reserved.reservation, user?.id ?? null);
    return waitNow > 0 ? { ok: false, reason: "throttled", waitSeconds: waitNow } : { ok: false, reason: "invalid" };
  }
  await signInSucceeded(reserved.reservation);
  if (needsRehash(user.passwordHash)) {
    await db().user.update({ where: { id: user.id }, data: { passwordHash: await hashPassword(password) } });
  }
  return {
    ok: true,
    user: { id: user.id, email: user.email, name: user.name, passwordChangedAt: user.passwordChangedAt },
  };
}

/** The user for an e-mail and password, or null (unthrottled: for tests and the CLI). */
export async function verifyCredentials(
  email: string,
  password: string,
): Promise<{ id: string; email: string; name: string } | null> {
  const user = await db().user.findUnique({ where: { email: email.trim().toLowerCase() } });
  const ok = await verifyPassword(password, user?.passwordHash ?? DUMMY_HASH);
  return user && ok ? { id: user.id, email: user.email, name: user.name } : null;
}

// scrypt with today's parameters, of no password anyone knows.
const DUMMY_HASH = "scrypt$32768$8$3$AAAAAAAAAAAAAAAAAAAAAA==$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
