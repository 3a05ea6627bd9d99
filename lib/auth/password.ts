/**
 * Password hashing with scrypt (node:crypto), stored as
 * `scrypt$N$r$p$saltB64$hashB64` so parameters can be raised later: a hash made
 * with older parameters still verifies, and is replaced at the next sign-in.
 * Parameters follow OWASP's Password Storage Cheat Sheet for scrypt
 * (N=2^15, r=8, p=3: 32 MiB of memory per hash). At most
 * PASSWORD_HASH_CONCURRENCY hashes run at once per process; the rest wait
 * their turn in order, so a burst of sign-ins costs time, not memory and
 * every thread of the pool.
 */
import { randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from "node:crypto";
import { env } from "../env";

const N = 2 ** 15;
const R = 8;
const P = 3;
const KEY_LEN = 32;
const MAXMEM = 256 * 1024 * 1024;

/** The fewest characters a password may have (NIST SP 800-63B asks for at least 8; more is kinder to people). */
export const MIN_PASSWORD_LENGTH = 12;
export const MAX_PASSWORD_LENGTH = 200;

let running = 0;
let peak = 0;
let total = 0;
const waiting: (() => void)[] = [];

/** Hashes running now and waiting, the most that ever ran at once in this process, and how many ran. */
export function hashingLoad(): { running: number; peak: number; waiting: number; total: number } {
  return { running, peak, waiting: waiting.length, total };
}

async function scrypt(password: string, salt: Buffer, keyLen: number, opts: ScryptOptions): Promise<Buffer> {
  // A finishing hash hands its slot to the next in line (it is not freed in between).
  if (running >= env().PASSWORD_HASH_CONCURRENCY) await new Promise<void>((go) => waiting.push(go));
  else running++;
  peak = Math.max(peak, running);
  total++;
  try {
    return await new Promise((resolve, reject) =>
      scryptCb(password, salt, keyLen, { ...opts, maxmem: MAXMEM }, (err, key) => (err ? reject(err) : resolve(key))),
    );
  } finally {
    const next = waiting.shift();
    if (next) next();
    else running--;
  }
}

/** Hashes a password for storage with the current parameters. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scrypt(password, salt, KEY_LEN, { N, r: R, p: P });
  return ["scrypt", N, R, P, salt.toString("base64"), key.toString("base64")].join("$");
}

/** Checks a password against a stored hash in constant time; false for malformed hashes. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, saltB64, hashB64] = stored.split("$");
  if (scheme !== "scrypt" || !n || !r || !p || !saltB64 || !hashB64) return false;
  const expected = Buffer.from(hashB64, "base64");
  const key = await scrypt(password, Buffer.from(saltB64, "base64"), expected.length, {
    N: Number(n),
    r: Number(r),
    p: Number(p),
  });
  return key.length === expected.length && timingSafeEqual(key, expected);
}

/** True when a stored hash was made with other parameters than today's (it is replaced at the next sign-in). */
export function needsRehash(stored: string): boolean {
  const [scheme, n, r, p] = stored.split("$");
  return scheme !== "scrypt" || Number(n) !== N || Number(r) !== R || Number(p) !== P;
}
