/**
 * What every database command of the CLI shares (scripts/cli/commands/*):
 *  - `--as <e-mail>` and `--tenant <slug>`: the user the command acts as, resolved
 *    to a Principal the way a session or token is (lib/auth/principal.ts), so the
 *    same lib/ functions as the API authorize and audit it;
 *  - `--json`: the lib/ answer (the API's JSON) on stdout instead of text;
 *  - the database, opened for the command and closed after it;
 *  - errors as one line and an exit code that says which kind (EXIT below).
 * Results go to stdout, notes to stderr; scripts/cli.ts sends every log record
 * (the log mail transport's invitations among them) to stderr, so `--json`
 * output stays parseable.
 */
import { Command, CommanderError, InvalidArgumentError, Option } from "commander";
import { loadUserPrincipal, type Principal } from "@/lib/auth/principal";
import { closeDb, db } from "@/lib/db";
import { AppError, type ErrorCode } from "@/lib/errors";
// The task registry: job views and pauses look task types up in it.
import "@/lib/workloads";
import { openDatabase } from "../database";
import { CliError, UsageError } from "./api";

export { CliError, UsageError };

/** The exit codes: 0 done, and per kind of failure. */
export const EXIT = {
  ok: 0,
  /** Anything else: the server's database unreachable, a bug. */
  failed: 1,
  /** A usage mistake: an unknown command or option, a missing or bad argument. */
  usage: 2,
  /** No such record, or not one the acting user may see (another tenant's job). */
  notFound: 3,
  /** The acting user may see it but not do this (a member replaying, a non-admin listing tenants). */
  forbidden: 4,
  /** The record is not in a state for this (a finished job cancelled, a slug taken). */
  conflict: 5,
} as const;

const EXIT_OF: Partial<Record<ErrorCode, number>> = {
  invalid_input: EXIT.usage,
  payload_too_large: EXIT.usage,
  not_found: EXIT.notFound,
  unauthorized: EXIT.forbidden,
  forbidden: EXIT.forbidden,
  conflict: EXIT.conflict,
  gone: EXIT.conflict,
};

export const exitCodesHelp = `
Exit codes: 0 done; 1 failed; 2 usage (unknown command or option, missing or bad argument);
3 not found (or not visible to the acting user); 4 forbidden; 5 conflict (not in a state for it).`;

/** An error as the one line to print and the code to exit with. */
export function describeFailure(err: unknown): { line: string; code: number } {
  if (err instanceof CommanderError) {
    // (--help and --version end here too, with code 0 and nothing more to say.)
    if (err.code === "commander.helpDisplayed" || err.code === "commander.version") return { line: "", code: 0 };
    // A group named without a command: its help went to stderr.
    if (err.code === "commander.help") return { line: "", code: EXIT.usage };
    const missing = /required option '(--[\w-]+)/.exec(err.message);
    const text = missing ? `error: ${missing[1]} is required` : err.message;
    return { line: `${oneLine(text)} (see --help)`, code: EXIT.usage };
  }
  if (err instanceof CliError) return { line: `error: ${oneLine(err.message)}`, code: err.exitCode };
  if (err instanceof AppError)
    return { line: `error: ${oneLine(err.message)}`, code: EXIT_OF[err.code] ?? EXIT.failed };
  const e = err as { name?: string; code?: string; message?: string };
  if (e?.name?.startsWith("PrismaClient")) {
    // Prisma's message opens with a code frame of the call; its last line is what went wrong.
    const cause = String(e.message).trim().split("\n").at(-1)?.trim();
    return { line: `error: the database: ${cause}`, code: EXIT.failed };
  }
  if (e?.code === "ECONNREFUSED") return { line: `error: cannot reach the database (${e.message})`, code: EXIT.failed };
  // Not an expected failure: the whole story, for a bug report.
  return { line: `error: ${(err as Error)?.stack ?? String(err)}`, code: EXIT.failed };
}

const oneLine = (s: string): string => s.replace(/\s*\n\s*/g, " ").trim();

// ── Options ──────────────────────────────────────────────────────────────────

/** `--as` and `--tenant`: who acts, and in (or on) which tenant. */
export function actingOptions(
  cmd: Command,
  opts: { required?: boolean; emailAlias?: boolean; tenant?: boolean } = {},
): Command {
  const as = new Option(
    "--as <e-mail>",
    opts.required === false
      ? "act as this user (authorized and audited as them); without it, as the server's operator"
      : "the user to act as: authorized and audited as them (required)",
  );
  cmd.addOption(as);
  // Before --as, these commands took the acting user as --email; kept so scripts keep working.
  if (opts.emailAlias) cmd.addOption(new Option("--email <e-mail>", "the same as --as").hideHelp());
  if (opts.tenant !== false) {
    cmd.option(
      "--tenant <slug>",
      "the tenant to act in (when the user belongs to several), or, for a platform admin, the tenant to act on",
    );
  }
  return cmd;
}

export const jsonOption = (cmd: Command): Command =>
  cmd.option("--json", "print the result as JSON (the API's shape) for scripts");

/** A whole number option or argument, checked by commander (`--limit x` is a usage error naming it). */
export function wholeNumber(min: number, max: number) {
  return (raw: string): number => {
    const n = Number(raw);
    if (!/^-?\d+$/.test(raw.trim()) || !Number.isSafeInteger(n)) throw new InvalidArgumentError("not a whole number.");
    if (n < min || n > max) throw new InvalidArgumentError(`must be ${min} to ${max}.`);
    return n;
  };
}

// ── Acting as a user ─────────────────────────────────────────────────────────

export type ActingOpts = { as?: string; email?: string; tenant?: string };

export type Acting = {
  principal: Principal;
  /**
   * The tenant named with --tenant. A member or operator acts in it (their
   * principal is that membership's); a platform admin who is not a member acts
   * on it: the commands pass it to lib/ as the tenant to act on or filter by.
   */
  tenant?: string;
};

/**
 * The user of `--as` as the API would see them: in the membership of `--tenant`
 * (required when they belong to several tenants), or in their only one; a
 * platform admin keeps their platform-wide view and acts on `--tenant`.
 */
export async function actingAs(opts: ActingOpts): Promise<Acting> {
  const acting = await resolveActing(opts);
  // The CLI reads the primary, never the read replica: each command is its own process, so none
  // would know the write the command before it made (`replay`, then `list`).
  return { ...acting, principal: { ...acting.principal, readPrimaryUntil: Number.POSITIVE_INFINITY } };
}

async function resolveActing(opts: ActingOpts): Promise<Acting> {
  const raw = opts.as ?? opts.email;
  if (!raw) throw new UsageError("--as is required: the e-mail of the user to act as");
  const email = raw.trim().toLowerCase();
  const user = await db().user.findUnique({
    where: { email },
    include: { memberships: { include: { tenant: { select: { slug: true } } } } },
  });
  if (!user) throw new CliError(`--as: no user with e-mail ${email}`, EXIT.notFound);
  if (opts.tenant !== undefined) {
    const tenant = await db().tenant.findUnique({ where: { slug: opts.tenant } });
    if (!tenant) throw new CliError(`--tenant: no tenant ${opts.tenant}`, EXIT.notFound);
    const member = user.memberships.some((m) => m.tenantId === tenant.id);
    if (!member && !user.isPlatformAdmin) {
      throw new CliError(`--tenant: ${email} is not a member of ${opts.tenant}`, EXIT.notFound);
    }
    const principal = await loadUserPrincipal(user.id, null, member ? tenant.id : undefined);
    if (!principal) throw new CliError(`--as: no user with e-mail ${email}`, EXIT.notFound);
    return { principal, tenant: opts.tenant };
  }
  if (user.memberships.length > 1 && !user.isPlatformAdmin) {
    const slugs = user.memberships.map((m) => m.tenant.slug).sort();
    throw new UsageError(`--tenant is required: ${email} is a member of ${slugs.join(", ")}`);
  }
  const principal = await loadUserPrincipal(user.id);
  if (!principal) throw new CliError(`--as: no user with e-mail ${email}`, EXIT.notFound);
  return { principal };
}

// ── Running a command ────────────────────────────────────────────────────────

/** What a command's handler gets: its options, its arguments, and how to print. */
export type Ctx<O> = {
  opts: O;
  args: unknown[];
  /** Prints `value` as JSON under --json, else the text `text()` makes (nothing when it is empty). */
  print(value: unknown, text: () => string): void;
  /** A note for people (stderr), left out under --json. */
  note(line: string): void;
};

/**
 * Wraps a command's handler: opens the database, runs it, closes the database.
 * An invalid_input from lib/ names the API's field; `fields` maps those names to
 * the command's own options or arguments (`maxRunning` → `<cap>`), otherwise
 * `errorClass` reads `--error-class`.
 */
export function handler<O extends { json?: boolean }>(
  fn: (ctx: Ctx<O>) => Promise<void>,
  fields: Record<string, string> = {},
): (...a: unknown[]) => Promise<void> {
  return async (...a) => {
    const cmd = a.at(-1) as Command;
    const opts = cmd.opts<O>();
    const ctx: Ctx<O> = {
      opts,
      args: cmd.processedArgs,
      print(value, text) {
        if (opts.json) process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
        else {
          const t = text();
          if (t) process.stdout.write(`${t}\n`);
        }
      },
      note(line) {
        if (!opts.json) process.stderr.write(`${line}\n`);
      },
    };
    const database = await openDatabase(() => {});
    try {
      await fn(ctx);
    } catch (err) {
      if (err instanceof AppError && err.code === "invalid_input" && err.fields?.length) {
        throw new UsageError(err.fields.map((f) => `${optionFor(f.path, fields)}: ${f.message}`).join("; "));
      }
      // "Job not found" about the command's <id>: say which (`Job not found: 123`).
      if (err instanceof AppError && err.code === "not_found" && typeof ctx.args[0] === "string") {
        if (/^\w+ not found$/.test(err.message)) throw new CliError(`${err.message}: ${ctx.args[0]}`, EXIT.notFound);
      }
      throw err;
    } finally {
      await closeDb();
      await database.stop();
    }
  };
}

/** The option or argument that gave an API field: `filter.errorClass` → `--error-class`. */
function optionFor(path: string, fields: Record<string, string>): string {
  const top = path.replace(/^filter\./, "").replace(/\.\d+$/, "");
  if (fields[top]) return fields[top];
  if (top === "(body)") return "input";
  return `--${top.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
}

/** A date for tables: `2026-12-01 13:05:07` (UTC), or `-`. */
export const when = (iso: string | null | undefined): string =>
  iso
    ? iso
        .replace("T", " ")
        .replace(/\.\d+Z$/, "")
        .replace(/Z$/, "")
    : "-";

/** Text cut to `max` characters on one line. */
export const cut = (s: string | null | undefined, max = 60): string => {
  const t = oneLine(s ?? "");
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
};
