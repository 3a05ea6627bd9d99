/**
 * Invitations (lib/auth/accounts.ts says how people join): made by operators
 * and platform admins (and the CLI), listed, revoked, opened by their link's
 * page, and used once.
 */
import { createHash, randomBytes } from "node:crypto";
import { z } from "zod";
import { recordAudit, type Actor } from "../audit";
import { db, pool } from "../db";
import { appUrl } from "../env";
import { AppError, notFound, parseOrThrow } from "../errors";
import { parseIdOr404 } from "../ids";
import { mailTransport } from "../mail";
import { run } from "../sql";
import { email, passwordSchema, role } from "./account-fields";
import { requireBrowserSession, requireOperator, requirePlatformAdmin, resolveTenantFor } from "./authorize";
import { hashPassword, MAX_PASSWORD_LENGTH } from "./password";
import type { Principal, Role } from "./principal";
import * as sql from "./sql/statements";

const INVITE_PREFIX = "inv_";
const INVITE_DAYS = 7;
const hashToken = (token: string) => createHash("sha256").update(token).digest("hex");

export type InviteDto = {
  id: string;
  email: string;
  tenant: { id: string; slug: string; name: string } | null;
  role: Role | null;
  platformAdmin: boolean;
  state: "pending" | "accepted" | "expired" | "revoked";
  expiresAt: string;
  createdAt: string;
  createdBy: string | null;
  /** Only in the answer that creates it: the link to send (the token is not kept). */
  link?: string;
  /** Only in the answer that creates it: whether it was e-mailed (or only printed, MAIL_TRANSPORT=log). */
  mailed?: boolean;
};

const inviteInclude = {
  tenant: { select: { id: true, slug: true, name: true } },
  createdBy: { select: { email: true } },
} as const;

type InviteRow = {
  id: string;
  email: string;
  tenant: { id: string; slug: string; name: string } | null;
  role: Role | null;
  platformAdmin: boolean;
  expiresAt: Date;
  acceptedAt: Date | null;
  revokedAt: Date | null;
  createdAt: Date;
  createdBy: { email: string } | null;
};

function toInviteDto(i: InviteRow, now = new Date()): InviteDto {
  return {
    id: i.id,
    email: i.email,
    tenant: i.tenant,
    role: i.role,
    platformAdmin: i.platformAdmin,
    state: i.acceptedAt ? "accepted" : i.revokedAt ? "revoked" : i.expiresAt <= now ? "expired" : "pending",
    expiresAt: i.expiresAt.toISOString(),
    createdAt: i.createdAt.toISOString(),
    createdBy: i.createdBy?.email ?? null,
  };
}

export const inviteSchema = z
  .object({
    email,
    /** A tenant's id or slug; operators may leave it out (their own). */
    tenant: z.string().trim().min(1).max(100).optional(),
    role: role.optional(),
    /** Platform admins only: invite another platform admin (no tenant). */
    platformAdmin: z.boolean({ error: "must be true or false" }).default(false),
  })
  .strict();

/**
 * Invites someone by e-mail: to a tenant (operators: their own, as member or
 * operator) or as a platform admin (platform admins). Answers with the link.
 */
export async function inviteUser(principal: Principal, body: unknown): Promise<InviteDto> {
  requireOperator(principal);
  requireBrowserSession(principal, "Inviting people");
  const input = parseOrThrow(inviteSchema, body);
  if (input.platformAdmin) {
    requirePlatformAdmin(principal, "Inviting a platform admin");
    if (input.tenant || input.role) {
      throw new AppError("invalid_input", "Invalid input: tenant: a platform admin is invited without a tenant", [
        { path: "tenant", message: "a platform admin is invited without a tenant" },
      ]);
    }
    return createInvite(principal, { email: input.email, tenantId: null, role: null, platformAdmin: true });
  }
  const tenantId = await resolveTenantFor(principal, input.tenant);
  if (!tenantId) {
    throw new AppError("invalid_input", "Invalid input: tenant: name the tenant to invite to", [
      { path: "tenant", message: "name the tenant to invite to" },
    ]);
  }
  return createInvite(principal, { email: input.email, tenantId, role: input.role ?? "member", platformAdmin: false });
}

/** Makes the invitation (the link is returned once), mails it, audits it. `actor` null: the command line. */
export async function createInvite(
  actor: Actor | null,
  target: { email: string; tenantId: string | null; role: Role | null; platformAdmin: boolean },
): Promise<InviteDto> {
  const token = INVITE_PREFIX + randomBytes(32).toString("base64url");
  const invite = await db().$transaction(async (tx) => {
    const {
      rows: [row],
    } = await run(tx, sql.insertInvite, [
      target.email,
      target.tenantId,
      target.role,
      target.platformAdmin,
      hashToken(token),
      INVITE_DAYS,
      actor?.userId ?? null,
    ]);
    await recordAudit(
      actor ?? { userId: null, tokenId: null, tenantId: target.tenantId },
      {
        action: "user.invite",
        targetType: "invite",
        targetIds: [row!.id],
        tenantId: target.tenantId,
        details: { email: target.email, role: target.role, platformAdmin: target.platformAdmin },
      },
      tx,
    );
    return tx.invite.findUniqueOrThrow({ where: { id: row!.id }, include: inviteInclude });
  });
  const link = `${appUrl()}/invite/${token}`;
  const where = invite.tenant ? `${invite.tenant.name} (as ${invite.role})` : "Conveyor as a platform admin";
  const transport = mailTransport();
  await transport.send({
    to: invite.email,
    subject: `You are invited to ${invite.tenant?.name ?? "Conveyor"}`,
    text: `You are invited to ${where}.\n\nSet your password here (the link works once, for ${INVITE_DAYS} days):\n${link}\n`,
  });
  return { ...toInviteDto(invite), link, mailed: transport.name !== "log" };
}

export const listInvitesSchema = z.object({ tenant: z.string().trim().min(1).max(100).optional() }).strict();

/** Invitations of the operator's tenant (platform admins: one tenant, or all), newest first (200). */
export async function listInvites(principal: Principal, raw: unknown = {}): Promise<InviteDto[]> {
  requireOperator(principal);
  const { tenant } = parseOrThrow(listInvitesSchema, raw);
  const tenantId = await resolveTenantFor(principal, tenant);
  const rows = await db().invite.findMany({
    where: tenantId ? { tenantId } : {},
    include: inviteInclude,
    orderBy: { createdAt: "desc" },
    take: 200,
  });
  return rows.map((r) => toInviteDto(r));
}

/** Revokes a pending invitation: its link stops working. Another tenant's answers 404. */
export async function revokeInvite(principal: Principal, rawId: string): Promise<void> {
  requireOperator(principal);
  requireBrowserSession(principal, "Revoking an invitation");
  const id = parseIdOr404(rawId, "Invitation not found");
  const invite = await db().invite.findUnique({ where: { id } });
  const visible = invite && (principal.isPlatformAdmin || (invite.tenantId && invite.tenantId === principal.tenantId));
  if (!invite || !visible) throw notFound("Invitation not found");
  const { rowCount: count } = await run(db(), sql.revokeInvite, [id]);
  if (count === 0) throw new AppError("conflict", "This invitation was already accepted or revoked");
  await recordAudit(principal, {
    action: "user.invite_revoke",
    targetType: "invite",
    targetIds: [id],
    tenantId: invite.tenantId,
    details: { email: invite.email },
  });
}

export type InviteInfo = {
  email: string;
  tenant: string | null;
  role: Role | null;
  platformAdmin: boolean;
  /** `pending`: usable; `accepted`: used — shown only to its invitee, signed in (anyone else gets 410). */
  state: "pending" | "accepted";
  expiresAt: string;
};

async function findInvite(token: string) {
  if (!token.startsWith(INVITE_PREFIX) || token.length > 200) throw notFound("Invitation not found");
  const invite = await db().invite.findUnique({ where: { tokenHash: hashToken(token) }, include: inviteInclude });
  if (!invite) throw notFound("Invitation not found");
  return invite;
}

async function findUsableInvite(token: string) {
  const invite = await findInvite(token);
  if (invite.acceptedAt) throw new AppError("gone", "This invitation was already used");
  if (invite.revokedAt) throw new AppError("gone", "This invitation was revoked");
  const {
    rows: [fresh],
  } = await run(pool(), sql.isFuture, [invite.expiresAt]);
  if (!fresh?.fresh) throw new AppError("gone", "This invitation has expired; ask for a new one");
  return invite;
}

/**
 * What an invitation link offers (for its page): 404 unknown, 410 used,
 * revoked or expired — but its own invitee, signed in (`viewer`), sees the one
 * they used as `accepted`. It never says whether the e-mail has an account.
 */
export async function getInviteInfo(token: string, viewer: Principal | null = null): Promise<InviteInfo> {
  const invite = await findInvite(token);
  const own = viewer !== null && viewer.tokenId === null && viewer.email === invite.email;
  const usedByViewer = own && invite.acceptedAt !== null && invite.revokedAt === null;
  if (!usedByViewer) await findUsableInvite(token);
  return {
    email: invite.email,
    tenant: invite.tenant?.name ?? null,
    role: invite.role,
    platformAdmin: invite.platformAdmin,
    state: usedByViewer ? "accepted" : "pending",
    expiresAt: invite.expiresAt.toISOString(),
  };
}

export const acceptInviteSchema = z
  .object({
    token: z.string({ error: "must be the invitation's token" }).min(1).max(200),
    /** A new account's name (without a session). */
    name: z.string({ error: "must be a text" }).trim().min(1, "must not be empty").max(200).optional(),
    /** A new account's password (without a session). */
    password: z
      .string({ error: "must be a text" })
      .max(MAX_PASSWORD_LENGTH, `must be at most ${MAX_PASSWORD_LENGTH} characters`)
      .optional(),
  })
  .strict();

/**
 * Uses an invitation, once. Signed in (a browser session, `principal`) as its
 * invitee: the membership (or the platform admin role) is granted to that
 * account. Without a session: a new account with the given name and password
 * is made and granted — and when the e-mail already has an account, nothing
 * happens but the same answer (no password is checked here, so the link is no
 * password oracle, and the answer says nothing about the account): its owner
 * signs in and opens the link again. Answers with the e-mail to sign in with.
 */
export async function acceptInvite(body: unknown, principal: Principal | null = null): Promise<{ email: string }> {
  const input = parseOrThrow(acceptInviteSchema, body);
  if (principal) {
    requireBrowserSession(principal, "Accepting an invitation while signed in");
    const invite = await findUsableInvite(input.token);
    if (principal.email !== invite.email) {
      throw new AppError(
        "forbidden",
        `This invitation is for ${invite.email}; you are signed in as ${principal.email}. Sign out, then open the link again.`,
      );
    }
    await grantInvite(invite, principal.userId, null);
    return { email: invite.email };
  }
  parseOrThrow(passwordSchema, input.password, "password");
  if (!input.name) {
    throw new AppError("invalid_input", "Invalid input: name: must not be empty", [
      { path: "name", message: "must not be empty" },
    ]);
  }
  const invite = await findUsableInvite(input.token);
  // Hashed either way: the answer takes as long whether or not the e-mail has an account.
  const passwordHash = await hashPassword(input.password!);
  const existing = await db().user.findUnique({ where: { email: invite.email }, select: { id: true } });
  if (!existing) await grantInvite(invite, null, { name: input.name, passwordHash });
  return { email: invite.email };
}

/** Marks the invitation used (once) and grants it: to `userId`, or to the account `create` makes. Audited. */
async function grantInvite(
  invite: { id: string; email: string; tenantId: string | null; role: Role | null; platformAdmin: boolean },
  userId: string | null,
  create: { name: string; passwordHash: string } | null,
): Promise<void> {
  await db().$transaction(async (tx) => {
    // One use: the first transaction to mark it wins, a concurrent one finds it taken.
    const { rowCount: taken } = await run(tx, sql.takeInvite, [invite.id]);
    if (taken === 0) throw new AppError("gone", "This invitation was already used");
    const [user] = userId
      ? [{ id: userId }]
      : (await run(tx, sql.insertInvitedUser, [invite.email, create!.name, create!.passwordHash])).rows;
    // Made meanwhile by another invitation: its owner signs in and opens this link again.
    if (!user) throw new AppError("gone", "This invitation was already used");
    if (invite.platformAdmin) {
      await run(tx, sql.makePlatformAdmin, [user.id]);
    } else {
      await run(tx, sql.grantMembership, [user.id, invite.tenantId, invite.role]);
    }
    await recordAudit(
      { userId: user.id, tokenId: null, tenantId: invite.tenantId },
      {
        action: "user.invite_accept",
        targetType: "user",
        targetIds: [user.id],
        tenantId: invite.tenantId,
        details: { invite: invite.id, email: invite.email, role: invite.role, platformAdmin: invite.platformAdmin },
      },
      tx,
    );
  });
}
