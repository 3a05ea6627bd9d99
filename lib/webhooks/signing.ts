/**
 * Standard Webhooks signatures (https://www.standardwebhooks.com): the secret
 * is `whsec_` + base64 of 32 random bytes; each request is signed with
 * HMAC-SHA256 over "<webhook-id>.<webhook-timestamp>.<body>", sent as
 * `webhook-signature: v1,<base64>` (several, space-separated, during a rotation).
 */
import { createHmac, randomBytes } from "node:crypto";

export const SECRET_PREFIX = "whsec_";

export function newSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString("base64");
}

function key(secret: string): Buffer {
  return Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, "base64");
}

/** One `v1,<base64>` signature of a message with one secret. */
export function sign(secret: string, id: string, timestampSeconds: number, body: string): string {
  const mac = createHmac("sha256", key(secret)).update(`${id}.${timestampSeconds}.${body}`).digest("base64");
  return `v1,${mac}`;
}

/** The request's signing headers; every secret given signs (the current one, then a rotated-out one). */
export function signatureHeaders(
  secrets: string[],
  id: string,
  body: string,
  timestampSeconds = Math.floor(Date.now() / 1000),
): Record<string, string> {
  return {
    "webhook-id": id,
    "webhook-timestamp": String(timestampSeconds),
    "webhook-signature": secrets.map((s) => sign(s, id, timestampSeconds, body)).join(" "),
  };
}
