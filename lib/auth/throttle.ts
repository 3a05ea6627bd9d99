/**
 * Sign-in throttling, shared by every app process through Postgres. Every try
 * is counted under three keys before its password is checked (reserved
 * atomically, so a concurrent burst is counted as it arrives; a success gives
 * its try back):
 *  - an account from one address: past SIGN_IN_MAX_FAILURES failures it must
 *    wait SIGN_IN_LOCK_SECONDS, doubling with each further failure (at most
 *    15 minutes); other addresses are not held up, and a success clears it;
 *  - one address, any accounts: past SIGN_IN_ADDRESS_MAX_FAILURES failures in
 *    15 minutes it waits 15 minutes (guessing across many accounts);
 *  - an account from anywhere: past SIGN_IN_ACCOUNT_MAX_FAILURES failures in an
 *    hour each further try waits 1 s, doubling, at most
 *    SIGN_IN_ACCOUNT_MAX_DELAY_SECONDS (guessing from many addresses is slowed;
 *    the wait never grows into a lock-out of the account's owner).
 * Addresses count as themselves (IPv4) or by their /64 (IPv6; lib/net.ts).
 * While a key waits, tries are refused without checking the password. Each
 * wait a failure starts is written to the audit log.
 */
import { recordAudit } from "../audit";
import { pool } from "../db";
import { env } from "../env";
import { logger } from "../log";
import { throttleAddress } from "../net";
import { forgetOldSignIns } from "./sql/forget-sign-ins";
import { releaseSignIn } from "./sql/release-sign-in";
import { reserveSignIn, type ThrottlePolicy } from "./sql/reserve-sign-in";
import { signInWaitOf } from "./sql/sign-in-wait";

const ADDRESS_WINDOW_S = 15 * 60;
const MAX_LOCK_S = 15 * 60;

/** Which limit a key is: an account from one address, an address across accounts, an account from anywhere. */
export type ThrottleLimit = "account-address" | "address" | "account";

type Keyed = ThrottlePolicy & { limit: ThrottleLimit };

function policies(email: string, address: string): Keyed[] {
  const e = env();
  const account = email.trim().toLowerCase();
  const from = throttleAddress(address);
  return [
    {
      limit: "account-address",
      key: `acct:${account} ip:${from}`,
      threshold: e.SIGN_IN_MAX_FAILURES,
      windowS: 24 * 60 * 60,
      baseS: e.SIGN_IN_LOCK_SECONDS,
      capS: MAX_LOCK_S,
    },
    {
      limit: "address",
      key: `ip:${from}`,
      threshold: e.SIGN_IN_ADDRESS_MAX_FAILURES,
      windowS: ADDRESS_WINDOW_S,
      baseS: ADDRESS_WINDOW_S,
      capS: ADDRESS_WINDOW_S,
    },
    {
      limit: "account",
      key: `acct:${account}`,
      threshold: e.SIGN_IN_ACCOUNT_MAX_FAILURES,
      windowS: 60 * 60,
      baseS: 1,
      capS: e.SIGN_IN_ACCOUNT_MAX_DELAY_SECONDS,
    },
  ];
}

/** Seconds until `email` may try again from `address` (0: now). */
export async function signInWait(email: string, address: string): Promise<number> {
  return signInWaitOf(
    pool(),
    policies(email, address).map((p) => p.key),
  );
}

/** A try that may check its password: its keys, and the waits it started (in force should it fail). */
export type SignInReservation = {
  email: string;
  address: string;
  reserved: { policy: Keyed; failures: number; waitSeconds: number }[];
};

/**
 * Counts a try before its password is checked. Refused (with the seconds to
 * wait) when any of its keys waits; a try refused by one key gives back what
 * it had reserved under the others.
 */
export async function reserveSignInTry(
  email: string,
  address: string,
): Promise<{ ok: true; reservation: SignInReservation } | { ok: false; waitSeconds: number }> {
  const reservation: SignInReservation = { email: email.trim().toLowerCase(), address, reserved: [] };
  for (const policy of policies(email, address)) {
    const row = await reserveSignIn(pool(), policy);
    if (!row) {
      await giveBack(reservation, false);
      logger.info({ limit: policy.limit, address }, `[auth] sign-in refused: ${policy.limit} limit in force`);
      return { ok: false, waitSeconds: Math.max(1, await signInWait(email, address)) };
    }
    reservation.reserved.push({ policy, ...row });
  }
  return { ok: true, reservation };
}

async function giveBack(reservation: SignInReservation, success: boolean): Promise<void> {
  for (const { policy } of reservation.reserved) {
    await releaseSignIn(pool(), {
      key: policy.key,
      threshold: policy.threshold,
      clear: success && policy.limit === "account-address",
    });
  }
}

/** The try succeeded: its count is given back (an account's count from that address is cleared). */
export async function signInSucceeded(reservation: SignInReservation): Promise<void> {
  await giveBack(reservation, true);
}

/**
 * The try failed: it stays counted. Each wait it started goes into the audit
 * log. Returns the seconds to wait now in force (0: may try again at once).
 */
export async function signInFailed(reservation: SignInReservation, userId: string | null): Promise<number> {
  for (const { policy, failures, waitSeconds } of reservation.reserved) {
    if (waitSeconds <= 0) continue;
    await recordAudit(
      { userId: null, tokenId: null, tenantId: null },
      {
        action: "auth.sign_in_throttled",
        targetType: "user",
        targetIds: userId ? [userId] : [],
        tenantId: null,
        details: {
          email: reservation.email,
          address: reservation.address,
          limit: policy.limit,
          failures,
          waitSeconds,
        },
      },
    );
    logger.warn(
      { limit: policy.limit, failures, waitSeconds, address: reservation.address },
      `[auth] sign-in throttled: ${policy.limit} limit, wait ${waitSeconds} s`,
    );
  }
  // Now and then, forget what no longer matters (the table stays small).
  if (Math.random() < 0.02) await forgetOldSignIns(pool());
  return signInWait(reservation.email, reservation.address);
}
