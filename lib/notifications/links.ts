/**
 * The links a notification mail carries: the job's page, and an unsubscribe link that turns the
 * member's e-mail for one kind off without a sign-in. The link is signed (HMAC-SHA-256) with a key
 * of the member's in that tenant (`notification_keys`, made with their first mail), so it needs no
 * server secret, names nothing a guess could forge, and stays valid until the key is dropped.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { SqlClient } from "../db";
import { appUrl } from "../env";
import { run } from "../sql";
import { existingKey, signingKey } from "./sql/statements";

export type UnsubscribeClaim = { userId: string; tenantId: string; kind: string };

const b64 = (s: string | Buffer) => Buffer.from(s).toString("base64url");
const sign = (key: string, payload: string) =>
  createHmac("sha256", Buffer.from(key, "base64url")).update(payload).digest();

/** The page a notification's mail links to: the job it is about. */
export function jobLink(jobId: string): string {
  return `${appUrl()}/jobs/${jobId}`;
}

/** The unsubscribe link for one member, tenant and kind (making the member's key on first use). */
export async function unsubscribeLink(on: SqlClient, claim: UnsubscribeClaim): Promise<string> {
  const { rows } = await run(on, signingKey, [claim.userId, claim.tenantId, randomBytes(32).toString("base64url")]);
  const payload = b64(`${claim.userId}:${claim.tenantId}:${claim.kind}`);
  return `${appUrl()}/unsubscribe/${payload}.${b64(sign(rows[0]!.key, payload))}`;
}

/** The claim of a well-signed token; null for anything else (malformed, forged, a dropped key). */
export async function verifyUnsubscribeToken(on: SqlClient, token: string): Promise<UnsubscribeClaim | null> {
  const m = /^([A-Za-z0-9_-]{1,400})\.([A-Za-z0-9_-]{43})$/.exec(token);
  if (!m) return null;
  const [userId, tenantId, kind] = Buffer.from(m[1]!, "base64url").toString("utf8").split(":");
  const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
  if (!userId || !tenantId || !kind || !uuid.test(userId) || !uuid.test(tenantId)) return null;
  const { rows } = await run(on, existingKey, [userId, tenantId]);
  const key = rows[0]?.key;
  if (!key) return null;
  const given = Buffer.from(m[2]!, "base64url");
  const expected = sign(key, m[1]!);
  return given.length === expected.length && timingSafeEqual(given, expected) ? { userId, tenantId, kind } : null;
}
