/**
 * The members of a tenant: listed, their role changed, removed (lib/auth/accounts.ts).
 */
import { z } from "zod";
import { recordAudit } from "../audit";
import { db, type Prisma } from "../db";
import { AppError, notFound, parseOrThrow } from "../errors";
import { parseIdOr404 } from "../ids";
import { run } from "../sql";
import { role } from "./account-fields";
import { requireBrowserSession, requireOperator, resolveTenantFor } from "./authorize";
import type { Principal, Role } from "./principal";
import * as sql from "./sql/statements";

export type MemberDto = { userId: string; email: string; name: string; role: Role; since: string };

export const membersQuerySchema = z.object({ tenant: z.string().trim().min(1).max(100).optional() }).strict();

/** The people of a tenant (an operator's own; platform admins name one). */
export async function listMembers(principal: Principal, raw: unknown = {}): Promise<MemberDto[]> {
  requireOperator(principal);
  const { tenant } = parseOrThrow(membersQuerySchema, raw);
  const tenantId = await resolveTenantFor(principal, tenant);
  if (!tenantId) {
    throw new AppError("invalid_input", "Invalid input: tenant: name the tenant", [
      { path: "tenant", message: "name the tenant" },
    ]);
  }
  const rows = await db().membership.findMany({
    where: { tenantId },
    include: { user: { select: { email: true, name: true } } },
    orderBy: { createdAt: "asc" },
  });
  return rows.map((m) => ({
    userId: m.userId,
    email: m.user.email,
    name: m.user.name,
    role: m.role,
    since: m.createdAt.toISOString(),
  }));
}

export const memberChangeSchema = z.object({ role, tenant: z.string().trim().min(1).max(100).optional() }).strict();

async function memberOf(principal: Principal, rawUserId: string, tenantRef: string | undefined) {
  const userId = parseIdOr404(rawUserId, "Member not found");
  const tenantId = await resolveTenantFor(principal, tenantRef);
  const membership = tenantId
    ? await db().membership.findUnique({
        where: { userId_tenantId: { userId, tenantId } },
        include: { user: { select: { email: true } } },
      })
    : null;
  if (!membership) throw notFound("Member not found");
  if (userId === principal.userId) {
    throw new AppError("forbidden", "You cannot change your own membership; ask another operator or a platform admin");
  }
  return membership;
}

/** Revokes the pending invitations a person sent to a tenant (they no longer may invite there); returns how many. */
async function revokeInvitesBy(tx: Prisma.TransactionClient, userId: string, tenantId: string): Promise<number> {
  return (await run(tx, sql.revokeInvitesBy, [userId, tenantId])).rowCount;
}

/**
 * Makes a member an operator or back. Operators (their tenant), platform admins; audited.
 * An operator made a member loses the pending invitations they sent.
 */
export async function changeMemberRole(principal: Principal, rawUserId: string, body: unknown): Promise<MemberDto> {
  requireOperator(principal);
  requireBrowserSession(principal, "Changing a member's role");
  const { role: next, tenant } = parseOrThrow(memberChangeSchema, body);
  const m = await memberOf(principal, rawUserId, tenant);
  const updated = await db().$transaction(async (tx) => {
    const row = await tx.membership.update({
      where: { userId_tenantId: { userId: m.userId, tenantId: m.tenantId } },
      data: { role: next },
      include: { user: { select: { email: true, name: true } } },
    });
    const revokedInvites =
      m.role === "operator" && next === "member" ? await revokeInvitesBy(tx, m.userId, m.tenantId) : 0;
    await recordAudit(
      principal,
      {
        action: "user.role",
        targetType: "user",
        targetIds: [m.userId],
        tenantId: m.tenantId,
        details: { email: m.user.email, from: m.role, to: next, revokedInvites },
      },
      tx,
    );
    return row;
  });
  return {
    userId: updated.userId,
    email: updated.user.email,
    name: updated.user.name,
    role: updated.role,
    since: updated.createdAt.toISOString(),
  };
}

/**
 * Removes someone from a tenant (their tokens for it and their streams stop working, the
 * invitations they sent to it are revoked). Operators, admins; audited.
 */
export async function removeMember(principal: Principal, rawUserId: string, tenantRef?: string): Promise<void> {
  requireOperator(principal);
  requireBrowserSession(principal, "Removing a member");
  const m = await memberOf(principal, rawUserId, tenantRef);
  await db().$transaction(async (tx) => {
    await tx.membership.delete({ where: { userId_tenantId: { userId: m.userId, tenantId: m.tenantId } } });
    await run(tx, sql.revokeMemberTokens, [m.userId, m.tenantId]);
    const revokedInvites = await revokeInvitesBy(tx, m.userId, m.tenantId);
    await recordAudit(
      principal,
      {
        action: "user.remove",
        targetType: "user",
        targetIds: [m.userId],
        tenantId: m.tenantId,
        details: { email: m.user.email, role: m.role, revokedInvites },
      },
      tx,
    );
  });
}
