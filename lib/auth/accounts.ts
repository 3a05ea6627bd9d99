/**
 * Accounts: people join by invitation, and manage their own password.
 *  - Platform admins create tenants (lib/tenants) and invite anyone: to a tenant
 *    as member or operator, or as a platform admin. Operators invite to their
 *    own tenant and change its members' roles (or remove them).
 *  - An invitation is a link with a random token (only its sha256 is kept):
 *    7 days, one use. It opens a page that makes a new account with a name and
 *    password, or — for someone who already has an account — adds the
 *    membership once they are signed in (the page never checks a password and
 *    never says whether the e-mail has an account). No mail server is needed:
 *    the link is shown to whoever invites (and printed by the CLI); lib/mail
 *    sends it when configured.
 *  - Managing people (inviting, revoking an invitation, changing a role,
 *    removing someone) needs a signed-in browser session: a leaked API token
 *    must not mint accounts (the link is returned to whoever invites).
 *  - Every change is audited.
 * Invitations are in invites.ts, members in members.ts; this file keeps one's own password.
 */
import { z } from "zod";
import { recordAudit } from "../audit";
import { db } from "../db";
import { AppError, parseOrThrow } from "../errors";
import { run } from "../sql";
import { passwordSchema } from "./account-fields";
import { isOperator, requireBrowserSession } from "./authorize";
import { hashPassword, MAX_PASSWORD_LENGTH, verifyPassword } from "./password";
import type { Principal } from "./principal";
import * as sql from "./sql/statements";

export { passwordSchema } from "./account-fields";
export * from "./invites";
export * from "./members";

// ── One's own password ───────────────────────────────────────────────────────

export const changePasswordSchema = z
  .object({
    currentPassword: z.string({ error: "must be a text" }).min(1, "must not be empty").max(MAX_PASSWORD_LENGTH),
    newPassword: passwordSchema,
  })
  .strict()
  .refine((v) => v.currentPassword !== v.newPassword, {
    message: "must differ from the current password",
    path: ["newPassword"],
  });

/**
 * Changes the signed-in user's password, given the current one. Every other
 * session of theirs ends (sessions older than the change are refused). Audited.
 */
export async function changePassword(principal: Principal, body: unknown): Promise<void> {
  requireBrowserSession(principal, "Changing a password");
  const { currentPassword, newPassword } = parseOrThrow(changePasswordSchema, body);
  const user = await db().user.findUniqueOrThrow({ where: { id: principal.userId } });
  if (!(await verifyPassword(currentPassword, user.passwordHash))) {
    throw new AppError("invalid_input", "Invalid input: currentPassword: this is not your current password", [
      { path: "currentPassword", message: "this is not your current password" },
    ]);
  }
  const passwordHash = await hashPassword(newPassword);
  await db().$transaction(async (tx) => {
    await run(tx, sql.setPassword, [user.id, passwordHash]);
    await recordAudit(principal, { action: "user.password", targetType: "user", targetIds: [user.id] }, tx);
  });
}

/** Who may see the people pages (the console's Users page). */
export function canManagePeople(principal: Principal): boolean {
  return isOperator(principal);
}
