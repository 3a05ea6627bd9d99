/**
 * `users list|create|invite` (`user` too): a tenant's people (GET
 * /api/v1/members) and invitations (POST /api/v1/invites), through the same lib/
 * functions. People join by invitation: both `create` and `invite` print the
 * one-time link that sets a password (and mail it when mail is configured).
 *
 * `users create` without `--as` is the one command that acts as nobody: the
 * server's operator, who holds the database anyway, makes the first platform
 * admin of a database that has no users yet (audited without a user).
 */
import type { Command } from "commander";
import { createInvite, inviteUser, listMembers, type InviteDto } from "@/lib/auth/accounts";
import { db } from "@/lib/db";
import { AppError } from "@/lib/errors";
import {
  actingAs,
  actingOptions,
  CliError,
  EXIT,
  handler,
  jsonOption,
  UsageError,
  when,
  type ActingOpts,
} from "../run";
import { table } from "../table";

type InviteOpts = ActingOpts & { json?: boolean; email: string; role?: string; admin?: boolean };

const ROLES = ["member", "operator"];

function printInvite(invite: InviteDto, print: (v: unknown, t: () => string) => void, note: (l: string) => void) {
  print(invite, () => invite.link ?? "");
  note(
    `Open this link to set the password of ${invite.email} (it works once, until ${invite.expiresAt}).` +
      (invite.mailed ? " It was also e-mailed." : ""),
  );
}

/** Who to invite, and as what: the options of create and invite. */
function inviteOptions(cmd: Command): Command {
  return cmd
    .requiredOption("--email <e-mail>", "their e-mail address, which they sign in with (required)")
    .option("--role <role>", `their role in the tenant: ${ROLES.join(" or ")} (default member)`)
    .option("--admin", "as a platform admin, in no tenant (platform admins)");
}

export function usersCommands(program: Command): void {
  const users = program
    .command("users")
    .alias("user")
    .description("people: list a tenant's members; create an account or invite someone (by a one-time link)");

  jsonOption(
    actingOptions(
      users
        .command("list")
        .description("a tenant's members and their roles (operators: their own; platform admins: --tenant)"),
    ),
  ).action(
    handler<ActingOpts & { json?: boolean }>(async ({ opts, print, note }) => {
      const { principal, tenant } = await actingAs(opts);
      const members = await listMembers(principal, tenant ? { tenant } : {});
      print({ members }, () =>
        members.length
          ? table(
              ["EMAIL", "NAME", "ROLE", "SINCE", "USER ID"],
              members.map((m) => [m.email, m.name, m.role, when(m.since), m.userId]),
            )
          : "",
      );
      if (!members.length) note("No members.");
    }),
  );

  jsonOption(
    actingOptions(
      inviteOptions(
        users
          .command("create")
          .description("make a new account: prints the one-time link that sets its password")
          .addHelpText(
            "after",
            "\nWith --as, as that user (operators: to their tenant; platform admins: any, or --admin).\n" +
              "Without --as, as the server's operator: how the first platform admin of a database without users is made\n" +
              "(npm run cli -- users create --email you@example.com --admin); then give --admin or --tenant.",
          ),
      ),
      { required: false },
    ),
  ).action(
    handler<InviteOpts>(
      async ({ opts, print, note }) => {
        const email = opts.email.trim().toLowerCase();
        if (opts.role !== undefined && !ROLES.includes(opts.role))
          throw new UsageError("--role must be member or operator");
        if (await db().user.findUnique({ where: { email }, select: { id: true } })) {
          throw new CliError(
            `${email} already has an account: invite them to a tenant with users invite`,
            EXIT.conflict,
          );
        }
        if (opts.as !== undefined) {
          const { principal, tenant } = await actingAs(opts);
          return printInvite(await inviteUser(principal, inviteBody(opts, tenant)), print, note);
        }
        // The server's operator, acting for nobody.
        if (Boolean(opts.admin) === Boolean(opts.tenant)) throw new UsageError("give either --admin or --tenant");
        if (opts.admin && opts.role) throw new UsageError("--role: a platform admin is invited without a tenant");
        let tenantId: string | null = null;
        if (opts.tenant) {
          const tenant = await db().tenant.findUnique({ where: { slug: opts.tenant } });
          if (!tenant) throw new AppError("not_found", `--tenant: no tenant ${opts.tenant}`);
          tenantId = tenant.id;
        }
        const invite = await createInvite(null, {
          email,
          tenantId,
          role: tenantId ? ((opts.role ?? "member") as "member" | "operator") : null,
          platformAdmin: Boolean(opts.admin),
        });
        printInvite(invite, print, note);
      },
      { platformAdmin: "--admin" },
    ),
  );

  jsonOption(
    actingOptions(
      inviteOptions(
        users
          .command("invite")
          .description(
            "invite someone, new or with an account, to a tenant (operators: their own) or as a platform admin",
          ),
      ),
    ),
  ).action(
    handler<InviteOpts>(
      async ({ opts, print, note }) => {
        const { principal, tenant } = await actingAs(opts);
        printInvite(await inviteUser(principal, inviteBody(opts, tenant)), print, note);
      },
      { platformAdmin: "--admin" },
    ),
  );
}

/** The body of POST /api/v1/invites from the options. */
const inviteBody = (opts: InviteOpts, tenant: string | undefined) => ({
  email: opts.email,
  ...(opts.role ? { role: opts.role } : {}),
  ...(opts.admin ? { platformAdmin: true } : {}),
  ...(tenant ? { tenant } : {}),
});
