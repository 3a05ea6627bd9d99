/**
 * Sign-in throttling, shared by every app process through Postgres. Failed
 * sign-ins are counted per account and client address, and per address:
 *  - an account from one address: after SIGN_IN_MAX_FAILURES failures it must
 *    wait SIGN_IN_LOCK_SECONDS, doubling with each further lock (at most 15
 *    minutes); other addresses are not locked out, and a success clears it;
 *  - one address, any accounts: past SIGN_IN_ADDRESS_MAX_FAILURES failures in
 *    15 minutes it waits 15 minutes (guessing across many accounts).
 * While a key waits, tries are refused without checking the password.
 */
import { pool } from "../db";
import { env } from "../env";

const ADDRESS_WINDOW_S = 15 * 60;
const MAX_LOCK_S = 15 * 60;

const accountKey = (email: string, address: string) => `acct:${email.trim().toLowerCase()} ip:${address}`;
const addressKey = (address: string) => `ip:${address}`;

/** Seconds until `email` may try again from `address` (0: now). */
export async function signInWait(email: string, address: string): Promise<number> {
  const { rows } = await pool().query<{ wait: number | null }>(
    `SELECT ceil(max(extract(epoch FROM locked_until - now())))::int AS wait FROM sign_in_throttle
     WHERE key = ANY($1::text[]) AND locked_until > now()`,
    [[accountKey(email, address), addressKey(address)]],
  );
  return Math.max(0, rows[0]?.wait ?? 0);
}

/** Counts a failed sign-in; returns the seconds to wait now in force (0: may try again at once). */
export async function recordSignInFailure(email: string, address: string): Promise<number> {
  const e = env();
  await pool().query(
    `INSERT INTO sign_in_throttle (key, failures, first_at, locked_until)
     VALUES ($1, 1, now(), CASE WHEN $2::int <= 1 THEN now() + make_interval(secs => $3) END)
     ON CONFLICT (key) DO UPDATE SET
       failures = sign_in_throttle.failures + 1,
       locked_until = CASE WHEN (sign_in_throttle.failures + 1) % $2 = 0
         THEN now() + make_interval(secs => least($4, $3 * power(2, (sign_in_throttle.failures + 1) / $2 - 1)))
         ELSE sign_in_throttle.locked_until END`,
    [accountKey(email, address), e.SIGN_IN_MAX_FAILURES, e.SIGN_IN_LOCK_SECONDS, MAX_LOCK_S],
  );
  await pool().query(
    `INSERT INTO sign_in_throttle (key, failures, first_at) VALUES ($1, 1, now())
     ON CONFLICT (key) DO UPDATE SET
       failures = CASE WHEN sign_in_throttle.first_at < now() - make_interval(secs => $3) THEN 1
                       ELSE sign_in_throttle.failures + 1 END,
       first_at = CASE WHEN sign_in_throttle.first_at < now() - make_interval(secs => $3) THEN now()
                       ELSE sign_in_throttle.first_at END,
       locked_until = CASE WHEN sign_in_throttle.first_at >= now() - make_interval(secs => $3)
                            AND sign_in_throttle.failures + 1 >= $2 THEN now() + make_interval(secs => $3)
                       ELSE sign_in_throttle.locked_until END`,
    [addressKey(address), e.SIGN_IN_ADDRESS_MAX_FAILURES, ADDRESS_WINDOW_S],
  );
  // Now and then, forget what no longer matters (the table stays small).
  if (Math.random() < 0.02) {
    await pool().query(
      `DELETE FROM sign_in_throttle WHERE first_at < now() - interval '1 day'
         AND (locked_until IS NULL OR locked_until < now())`,
    );
  }
  return signInWait(email, address);
}

/** A successful sign-in clears its account's count from that address. */
export async function recordSignInSuccess(email: string, address: string): Promise<void> {
  await pool().query("DELETE FROM sign_in_throttle WHERE key = $1", [accountKey(email, address)]);
}
