/**
 * The CLI's commands that act on the database directly (scripts/cli.ts runs them):
 *   token create --email <e-mail> [--tenant <slug>] [--name <label>] [--read-only] [--expires-in-days N]
 *   user create --email <e-mail> (--admin | --tenant <slug> [--role member|operator])
 *   tenant create --slug <slug> --name <name>
 *   schedules list --email <e-mail> [--tenant <slug>]
 *   schedules pause|resume|trigger <id> --email <e-mail>
 *   webhooks list --email <e-mail> [--tenant <slug>]
 *   webhooks test|enable|disable <endpoint id> --email <e-mail>
 *   webhooks recover <endpoint id> --since <ISO time> --email <e-mail>
 * `user create` prints a one-time link that sets the password: the way to make
 * the first platform admin of a database that has no demo data.
 */
import { parseArgs } from "node:util";
import { createInvite } from "@/lib/auth/accounts";
import { loadUserPrincipal, type Principal } from "@/lib/auth/principal";
import { createApiTokenForEmail } from "@/lib/auth/tokens";
import { closeDb, db } from "@/lib/db";
import { AppError } from "@/lib/errors";
import { listSchedules, pauseSchedule, triggerSchedule, type ScheduleDto } from "@/lib/schedules/service";
import { listEndpoints, recoverEndpoint, sendTestEvent, updateEndpoint } from "@/lib/webhooks/service";
import "@/lib/workloads";
import { openDatabase } from "../database";
import { table } from "./table";

const usage = `usage:
  npm run cli -- token create --email <e-mail> [--tenant <slug>] [--name <label>] [--read-only] [--expires-in-days N]
  npm run cli -- user create --email <e-mail> (--admin | --tenant <slug> [--role member|operator])
  npm run cli -- tenant create --slug <slug> --name <name>
  npm run cli -- schedules list --email <e-mail> [--tenant <slug>]
  npm run cli -- schedules pause|resume|trigger <schedule id> --email <e-mail>
  npm run cli -- webhooks list --email <e-mail> [--tenant <slug>]
  npm run cli -- webhooks test|enable|disable <endpoint id> --email <e-mail>
  npm run cli -- webhooks recover <endpoint id> --since <ISO time> --email <e-mail>
  npm run cli -- imports create|get|list|errors …   (through the HTTP API with a token: npm run cli -- imports --help)
The schedules and webhooks commands act as the user with that e-mail, in their tenant (--tenant: a platform admin's filter,
or which of a user's tenants).`;

type Values = Record<string, string | boolean | undefined>;

/** A usage mistake: one line, exit code 2. */
class UsageError extends Error {}

const need = (values: Values, name: string): string => {
  const v = values[name];
  if (typeof v !== "string" || !v) throw new UsageError(`--${name} is required`);
  return v;
};

/**
 * The user with `--email`, as the API would see them: in their first tenant, or
 * in `--tenant` when they belong to it (a platform admin keeps the whole view).
 */
async function actingAs(values: Values): Promise<Principal> {
  const email = need(values, "email").trim().toLowerCase();
  const user = await db().user.findUnique({ where: { email } });
  if (!user) throw new AppError("not_found", `No user with e-mail ${email}`);
  let tenantId: string | undefined;
  if (typeof values.tenant === "string" && !user.isPlatformAdmin) {
    const tenant = await db().tenant.findUnique({ where: { slug: values.tenant } });
    if (!tenant) throw new AppError("not_found", `No tenant ${values.tenant}`);
    tenantId = tenant.id;
  }
  const principal = await loadUserPrincipal(user.id, null, tenantId);
  if (!principal) throw new AppError("not_found", `${email} is not a member of ${String(values.tenant)}`);
  return principal;
}

/** The commands that take a schedule's id after their name. */
const TAKES_ID = new Set([
  "schedules pause",
  "schedules resume",
  "schedules trigger",
  "webhooks test",
  "webhooks enable",
  "webhooks disable",
  "webhooks recover",
]);

/** The one positional argument after the command: a schedule's id. */
const idArg = (args: string[]): string => {
  if (args.length !== 1 || !args[0]) throw new UsageError("give the schedule's id");
  return args[0];
};

function printSchedule(s: ScheduleDto): void {
  console.log(
    `${s.id}  ${s.name}: ${s.paused ? "paused" : `active, next run ${s.nextRunAt ?? "none"}`} (${s.cron}, ${s.timezone})`,
  );
}

const commands: Record<string, (values: Values, args: string[]) => Promise<void>> = {
  async "token create"(values) {
    const days = values["expires-in-days"];
    const token = await createApiTokenForEmail(
      need(values, "email"),
      typeof values.name === "string" ? values.name : "cli",
      typeof values.tenant === "string" ? values.tenant : undefined,
      {
        scopes: values["read-only"] ? ["read"] : ["read", "write"],
        ...(typeof days === "string" ? { expiresInDays: Number(days) } : {}),
      },
    );
    console.log(token);
    console.error("This token is shown once. Send it as: Authorization: Bearer <token>");
  },

  async "user create"(values) {
    const email = need(values, "email").trim().toLowerCase();
    if (Boolean(values.admin) === Boolean(values.tenant)) throw new UsageError("give either --admin or --tenant");
    let tenantId: string | null = null;
    if (typeof values.tenant === "string") {
      const tenant = await db().tenant.findUnique({ where: { slug: values.tenant } });
      if (!tenant) throw new AppError("not_found", `No tenant ${values.tenant}`);
      tenantId = tenant.id;
    }
    const role = typeof values.role === "string" ? values.role : "member";
    if (role !== "member" && role !== "operator") throw new UsageError("--role must be member or operator");
    const invite = await createInvite(null, {
      email,
      tenantId,
      role: tenantId ? role : null,
      platformAdmin: Boolean(values.admin),
    });
    console.log(invite.link);
    console.error(
      `Open this link to set the password of ${email} (it works once, until ${invite.expiresAt}).` +
        (invite.mailed ? " It was also e-mailed." : ""),
    );
  },

  async "tenant create"(values) {
    const slug = need(values, "slug");
    const name = need(values, "name");
    const [row] = await db().$queryRaw<{ id: string }[]>`
      INSERT INTO tenants (id, slug, name) VALUES (gen_random_uuid(), ${slug}, ${name})
      ON CONFLICT (slug) DO NOTHING RETURNING id`;
    if (!row) throw new AppError("conflict", `A tenant with slug ${slug} already exists`);
    console.log(row.id);
  },

  async "schedules list"(values) {
    const principal = await actingAs(values);
    const { schedules } = await listSchedules(
      principal,
      principal.isPlatformAdmin && typeof values.tenant === "string" ? { tenant: values.tenant } : {},
    );
    if (!schedules.length) {
      console.error("No schedules.");
      return;
    }
    console.log(
      table(
        [
          "ID",
          ...(principal.isPlatformAdmin ? ["TENANT"] : []),
          "NAME",
          "CRON",
          "ZONE",
          "STATE",
          "NEXT RUN",
          "LAST RUN",
        ],
        schedules.map((s) => [
          s.id,
          ...(principal.isPlatformAdmin ? [s.tenant ?? ""] : []),
          s.name,
          s.cron,
          s.timezone,
          s.paused ? "paused" : "active",
          s.nextRunAt ?? "-",
          s.lastRun ? `${s.lastRun.status} (${s.lastRun.scheduledFor})` : "-",
        ]),
      ),
    );
  },

  async "schedules pause"(values, args) {
    printSchedule(await pauseSchedule(await actingAs(values), idArg(args), true));
  },

  async "schedules resume"(values, args) {
    printSchedule(await pauseSchedule(await actingAs(values), idArg(args), false));
  },

  async "schedules trigger"(values, args) {
    const out = await triggerSchedule(await actingAs(values), idArg(args));
    if (out.runs.length) console.log(out.runs.join("\n"));
    console.error(
      `${out.runs.length} run(s) made` +
        (out.skipped ? `, ${out.skipped} skipped for an open run` : "") +
        (out.cancelled ? `, ${out.cancelled} open run(s) cancelled` : ""),
    );
  },

  async "webhooks list"(values) {
    const principal = await actingAs(values);
    const endpoints = await listEndpoints(
      principal,
      principal.isPlatformAdmin && typeof values.tenant === "string" ? { tenant: values.tenant } : {},
    );
    if (!endpoints.length) {
      console.error("No webhook endpoints.");
      return;
    }
    console.log(
      table(
        ["ID", ...(principal.isPlatformAdmin ? ["TENANT"] : []), "URL", "EVENTS", "STATE", "24H OK", "PENDING", "DEAD"],
        endpoints.map((e) => [
          e.id,
          ...(principal.isPlatformAdmin ? [e.tenant] : []),
          e.url,
          e.events.join(","),
          e.disabled ? `disabled: ${e.disabledReason ?? ""}` : `circuit ${e.health.circuit}`,
          e.health.successRate24h === null ? "-" : `${Math.round(e.health.successRate24h * 100)}%`,
          String(e.health.pending),
          String(e.health.dead),
        ]),
      ),
    );
  },

  async "webhooks test"(values, args) {
    const out = await sendTestEvent(await actingAs(values), idArg(args));
    console.log(`ping ${out.messageId} queued (delivery ${out.deliveryId})`);
  },

  async "webhooks enable"(values, args) {
    const e = await updateEndpoint(await actingAs(values), idArg(args), { disabled: false });
    console.log(`${e.id} enabled`);
  },

  async "webhooks disable"(values, args) {
    const e = await updateEndpoint(await actingAs(values), idArg(args), { disabled: true });
    console.log(`${e.id} disabled`);
  },

  async "webhooks recover"(values, args) {
    const out = await recoverEndpoint(await actingAs(values), idArg(args), { since: need(values, "since") });
    console.log(`${out.replayed} failed deliveries replayed`);
  },
};

export async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        email: { type: "string" },
        tenant: { type: "string" },
        name: { type: "string" },
        slug: { type: "string" },
        role: { type: "string" },
        admin: { type: "boolean" },
        "read-only": { type: "boolean" },
        "expires-in-days": { type: "string" },
        since: { type: "string" },
        help: { type: "boolean" },
      },
    });
  } catch (err) {
    console.error(`${(err as Error).message}\n${usage}`);
    return 2;
  }
  const { positionals, values } = parsed;
  // A command is two words; what follows is its arguments (a schedule's id).
  const name = positionals.slice(0, 2).join(" ");
  const args = positionals.slice(2);
  const command = commands[name];
  if (values.help || !command || (args.length > 0 && !TAKES_ID.has(name))) {
    console.error(usage);
    return values.help ? 0 : 2;
  }
  const database = await openDatabase(() => {});
  try {
    await command(values, args);
    return 0;
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(`${err.message}\n${usage}`);
      return 2;
    }
    if (err instanceof AppError) {
      console.error(err.message);
      return 1;
    }
    throw err;
  } finally {
    await closeDb();
    await database.stop();
  }
}
