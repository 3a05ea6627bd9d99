/**
 * Reserves one sign-in try under a throttle key, before its password is
 * checked: counted as a failure at once (a success gives it back, see
 * release-sign-in.ts), so a concurrent burst cannot all pass a check before the
 * first failure is written — the row's lock orders them. A key whose wait is in
 * force reserves nothing (null: refused). Past `threshold` failures within
 * `windowS`, the try that counts sets the wait: `baseS` doubling per further
 * failure, at most `capS`. A key whose window has passed starts again at 1.
 */
import { prepared, type SqlClient } from "../../db";

export type ThrottlePolicy = { key: string; threshold: number; windowS: number; baseS: number; capS: number };

export async function reserveSignIn(
  client: SqlClient,
  p: ThrottlePolicy,
): Promise<{ failures: number; waitSeconds: number } | null> {
  const { rows } = await client.query<{ failures: number; waitSeconds: number }>({
    ...prepared(`INSERT INTO sign_in_throttle AS t (key, failures, first_at, locked_until)
     VALUES ($1, 1, now(), CASE WHEN 1 >= $2::int THEN now() + make_interval(secs => least($5::float8, $4::float8)) END)
     ON CONFLICT (key) DO UPDATE SET
       failures = CASE WHEN t.first_at < now() - make_interval(secs => $3::int) THEN 1 ELSE t.failures + 1 END,
       first_at = CASE WHEN t.first_at < now() - make_interval(secs => $3::int) THEN now() ELSE t.first_at END,
       locked_until = CASE
         WHEN (CASE WHEN t.first_at < now() - make_interval(secs => $3::int) THEN 1 ELSE t.failures + 1 END) >= $2::int
         THEN now() + make_interval(secs => least($5::float8, $4::float8 * power(2::float8,
           (CASE WHEN t.first_at < now() - make_interval(secs => $3::int) THEN 1 ELSE t.failures + 1 END) - $2::int)))
         END
     WHERE t.locked_until IS NULL OR t.locked_until <= now()
     RETURNING failures, coalesce(ceil(extract(epoch FROM locked_until - now())), 0)::int AS "waitSeconds"`),
    values: [p.key, p.threshold, p.windowS, p.baseS, p.capS],
  });
  return rows[0] ?? null;
}
