/**
 * Conveyor's command line: `npm run cli -- <command> [options]`.
 *   token create --email <e-mail> [--tenant <slug>] [--name <label>] [--read-only] [--expires-in-days N]
 *   user create --email <e-mail> (--admin | --tenant <slug> [--role member|operator])
 *   tenant create --slug <slug> --name <name>
 * `user create` prints a one-time link that sets the password: the way to make
 * the first platform admin of a database that has no demo data.
 */
import { parseArgs } from "node:util";
import { createInvite } from "@/lib/auth/accounts";
import { createApiTokenForEmail } from "@/lib/auth/tokens";
import { closeDb, db } from "@/lib/db";
import { AppError } from "@/lib/errors";
import "@/lib/workloads";
import { openDatabase } from "./database";

const usage = `usage:
  npm run cli -- token create --email <e-mail> [--tenant <slug>] [--name <label>] [--read-only] [--expires-in-days N]
  npm run cli -- user create --email <e-mail> (--admin | --tenant <slug> [--role member|operator])
  npm run cli -- tenant create --slug <slug> --name <name>`;

type Values = Record<string, string | boolean | undefined>;

/** A usage mistake: one line, exit code 2. */
class UsageError extends Error {}

const need = (values: Values, name: string): string => {
  const v = values[name];
  if (typeof v !== "string" || !v) throw new UsageError(`--${name} is required`);
  return v;
};

const commands: Record<string, (values: Values) => Promise<void>> = {
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
};

async function main(): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
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
        help: { type: "boolean" },
      },
    });
  } catch (err) {
    console.error(`${(err as Error).message}\n${usage}`);
    return 2;
  }
  const { positionals, values } = parsed;
  const command = commands[positionals.join(" ")];
  if (values.help || !command) {
    console.error(usage);
    return values.help ? 0 : 2;
  }
  const database = await openDatabase(() => {});
  try {
    await command(values);
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

main().then(
  (code) => process.exit(code),
  (err: Error) => {
    console.error(err.stack ?? err.message);
    process.exit(1);
  },
);
