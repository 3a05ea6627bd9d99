/**
 * Demo data: tenants Acme and Globex, five users, and business data generated
 * in SQL. Safe to run twice: accounts are upserted (a password once set is
 * kept), and a table is filled only while the tenant has no rows in it.
 * The demo accounts' password is random, kept in <CONVEYOR_DATA_DIR>/demo-password
 * (mode 600) and printed by `npm start`, unless CONVEYOR_DEMO_PASSWORD names one
 * (`conveyor-demo` is the documented one the tests ask for).
 *   npm run db:seed            (SEED_SCALE=0.1 for a tenth of the rows)
 */
import { randomBytes } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { hashPassword, verifyPassword } from "@/lib/auth/password";
import { closeDb, pool } from "@/lib/db";
import { dataDir, env } from "@/lib/env";
import { logger } from "@/lib/log";
import type pg from "pg";

/** The documented demo password: the demo accounts get it only when asked (CONVEYOR_DEMO_PASSWORD=conveyor-demo). */
export const DOCUMENTED_DEMO_PASSWORD = "conveyor-demo";

/** Where the demo accounts' random password is kept, for the machine's owner only. */
export function demoPasswordFile(): string {
  return path.join(dataDir(), "demo-password");
}

const randomPassword = () => randomBytes(12).toString("base64url");

/**
 * The demo accounts' password: CONVEYOR_DEMO_PASSWORD when set; else the one
 * kept in demoPasswordFile(); else a new random one, kept there.
 */
export async function demoPassword(): Promise<string> {
  const kept = await keptDemoPassword();
  if (kept) return kept;
  const file = demoPasswordFile();
  const fresh = randomPassword();
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, `${fresh}\n`, { mode: 0o600 });
  return fresh;
}

/** CONVEYOR_DEMO_PASSWORD, or the password kept in demoPasswordFile(); null when neither is there. */
export async function keptDemoPassword(): Promise<string | null> {
  const given = env().CONVEYOR_DEMO_PASSWORD;
  if (given) return given;
  const kept = await readFile(demoPasswordFile(), "utf8").then(
    (s) => s.trim(),
    () => "",
  );
  return kept || null;
}

/**
 * Demo accounts an older release made with the documented password (none was
 * asked for, none is kept): given the kept random one. Returns how many.
 */
export async function retireDocumentedDemoPassword(): Promise<number> {
  if (await keptDemoPassword()) return 0;
  const { rows } = await pool().query<{ id: string; password_hash: string }>(
    "SELECT id, password_hash FROM users WHERE email = ANY($1::text[])",
    [demoUsers.map((u) => u.email)],
  );
  const documented: string[] = [];
  for (const r of rows) if (await verifyPassword(DOCUMENTED_DEMO_PASSWORD, r.password_hash)) documented.push(r.id);
  if (!documented.length) return 0;
  const hash = await hashPassword(await demoPassword());
  await pool().query("UPDATE users SET password_hash = $2, password_changed_at = now() WHERE id = ANY($1::uuid[])", [
    documented,
    hash,
  ]);
  return documented.length;
}

export const demoTenants = [
  { slug: "acme", name: "Acme Corporation", customers: 20_000, orders: 100_000, events: 1_000_000 },
  { slug: "globex", name: "Globex", customers: 500, orders: 2_000, events: 5_000 },
] as const;

export const demoUsers = [
  { email: "ada@acme.test", name: "Ada Member", tenant: "acme", role: "member", admin: false },
  { email: "oscar@acme.test", name: "Oscar Operator", tenant: "acme", role: "operator", admin: false },
  { email: "gus@globex.test", name: "Gus Member", tenant: "globex", role: "member", admin: false },
  { email: "gina@globex.test", name: "Gina Operator", tenant: "globex", role: "operator", admin: false },
  { email: "root@conveyor.test", name: "Root Admin", tenant: null, role: null, admin: true },
] as const;

async function upsertAccounts(c: pg.PoolClient, password: string): Promise<Map<string, string>> {
  const tenantIds = new Map<string, string>();
  for (const t of demoTenants) {
    const { rows } = await c.query<{ id: string }>(
      `INSERT INTO tenants (id, slug, name) VALUES (gen_random_uuid(), $1, $2)
       ON CONFLICT (slug) DO UPDATE SET name = EXCLUDED.name RETURNING id`,
      [t.slug, t.name],
    );
    tenantIds.set(t.slug, rows[0]!.id);
  }
  const passwordHash = await hashPassword(password);
  for (const u of demoUsers) {
    const { rows } = await c.query<{ id: string }>(
      `INSERT INTO users (id, email, name, password_hash, is_platform_admin) VALUES (gen_random_uuid(), $1, $2, $3, $4)
       ON CONFLICT (email) DO UPDATE SET name = EXCLUDED.name, is_platform_admin = EXCLUDED.is_platform_admin RETURNING id`,
      [u.email, u.name, passwordHash, u.admin],
    );
    if (u.tenant) {
      await c.query(
        `INSERT INTO memberships (user_id, tenant_id, role) VALUES ($1, $2, $3::membership_role)
         ON CONFLICT (user_id, tenant_id) DO UPDATE SET role = EXCLUDED.role`,
        [rows[0]!.id, tenantIds.get(u.tenant), u.role],
      );
    }
  }
  return tenantIds;
}

async function isEmpty(c: pg.PoolClient, table: string, tenantId: string): Promise<boolean> {
  const { rows } = await c.query(`SELECT 1 FROM ${table} WHERE tenant_id = $1 LIMIT 1`, [tenantId]);
  return rows.length === 0;
}

// Text with commas, quotes, newlines and non-ASCII, so exports are tested on what breaks naive CSV.
const NOTE_SQL = `CASE g % 7
  WHEN 0 THEN 'Prefers "express" delivery, please'
  WHEN 1 THEN E'Line one\\nline two, with comma'
  WHEN 2 THEN 'Zürich office — ünïcödé ✓ 東京 🚀'
  WHEN 3 THEN NULL
  WHEN 4 THEN 'Plain note'
  WHEN 5 THEN E'Tab\\tand ''single'' quotes'
  ELSE 'Semi; colon, comma "quote"' END`;

async function seedBusinessData(
  c: pg.PoolClient,
  tenantId: string,
  t: (typeof demoTenants)[number],
  scale: number,
): Promise<void> {
  const n = (x: number) => Math.max(10, Math.round(x * scale));
  if (await isEmpty(c, "customers", tenantId)) {
    await c.query(
      `INSERT INTO customers (tenant_id, name, email, country, plan, notes, metadata, created_at)
       SELECT $1::uuid,
              (ARRAY['Ada','Grace','Linus','Margaret','Émile','Søren','Zoë','Ngozi','Hiro','O''Brien'])[1 + g % 10] || ' ' || 'Customer ' || g,
              'customer' || g || '@example.' || (ARRAY['com','org','net'])[1 + g % 3],
              (ARRAY['US','DE','FR','JP','NG','BR','IN','GB'])[1 + g % 8],
              (ARRAY['free','team','business','enterprise'])[1 + g % 4],
              ${NOTE_SQL},
              jsonb_build_object('segment', (ARRAY['smb','mid','ent'])[1 + g % 3], 'score', g % 100, 'tags', jsonb_build_array('t' || (g % 5), 't' || (g % 11))),
              now() - make_interval(mins => g * 13)
       FROM generate_series(1, $2::int) g`,
      [tenantId, n(t.customers)],
    );
  }
  const { rows } = await c.query<{ lo: string; hi: string }>(
    `SELECT min(id) AS lo, max(id) AS hi FROM customers WHERE tenant_id = $1`,
    [tenantId],
  );
  const lo = Number(rows[0]!.lo);
  const count = Number(rows[0]!.hi) - lo + 1;
  if (await isEmpty(c, "orders", tenantId)) {
    await c.query(
      `INSERT INTO orders (tenant_id, customer_id, status, amount, currency, line_items, note, created_at, updated_at)
       SELECT $1::uuid, $3::bigint + (g::bigint * 7919) % $4::bigint,
              (ARRAY['pending','paid','shipped','delivered','refunded','cancelled'])[1 + g % 6],
              round(((g::bigint * 37) % 100000) / 100.0 + 1, 2),
              (ARRAY['USD','EUR','JPY','GBP'])[1 + g % 4],
              jsonb_build_array(jsonb_build_object('sku', 'SKU-' || (g % 500), 'qty', 1 + g % 4, 'price', ((g * 13) % 5000) / 100.0)),
              ${NOTE_SQL},
              now() - make_interval(mins => g * 5),
              now() - make_interval(mins => g * 5) + make_interval(mins => g % 600)
       FROM generate_series(1, $2::int) g`,
      [tenantId, n(t.orders), lo, count],
    );
  }
  if (await isEmpty(c, "events", tenantId)) {
    await c.query(
      `INSERT INTO events (tenant_id, customer_id, type, source, payload, message, occurred_at)
       SELECT $1::uuid, $3::bigint + (g::bigint * 104729) % $4::bigint,
              (ARRAY['page.viewed','order.created','order.paid','user.signed_in','export.requested','webhook.failed'])[1 + g % 6],
              (ARRAY['web','ios','android','api'])[1 + g % 4],
              jsonb_build_object('ip', '10.' || (g % 256) || '.' || (g / 256 % 256) || '.1', 'path', '/p/' || (g % 1000), 'ms', g % 2000),
              CASE g % 5
                WHEN 0 THEN 'User "' || g || '" signed in, from Zürich'
                WHEN 1 THEN E'Retry scheduled\\nattempt ' || (g % 5)
                WHEN 2 THEN 'Checkout, step ' || (g % 4) || ' — ✓ 東京'
                ELSE 'Viewed /p/' || (g % 1000) END,
              now() - make_interval(secs => g * 30)
       FROM generate_series(1, $2::int) g`,
      [tenantId, n(t.events), lo, count],
    );
  }
}

/**
 * Seeds the demo accounts and data; returns the tenants' ids by slug. New
 * accounts get `password` (by default a random one nobody keeps: for scratch
 * databases; `npm start` and `npm run db:seed` pass demoPassword()).
 */
export async function seed(scale = env().SEED_SCALE, password = randomPassword()): Promise<Map<string, string>> {
  const c = await pool().connect();
  try {
    const tenantIds = await upsertAccounts(c, password);
    for (const t of demoTenants) await seedBusinessData(c, tenantIds.get(t.slug)!, t, scale);
    await c.query("ANALYZE customers; ANALYZE orders; ANALYZE events");
    return tenantIds;
  } finally {
    c.release();
  }
}

/** True when no tenant exists yet (npm start seeds only then). */
/**
 * Whether `npm start` seeds the demo tenants and accounts: into the embedded
 * development database, or a given one when asked (CONVEYOR_DEMO=1 or
 * `--demo`) — and only ever into an empty database.
 */
export function demoWanted(o: {
  givenDatabase: boolean;
  demoEnv: boolean;
  demoFlag: boolean;
  empty: boolean;
}): boolean {
  return o.empty && (!o.givenDatabase || o.demoEnv || o.demoFlag);
}

/** No tenant and no user yet: demo data may go in. */
export async function isDatabaseEmpty(): Promise<boolean> {
  const { rows } = await pool().query("SELECT 1 FROM tenants UNION ALL SELECT 1 FROM users LIMIT 1");
  return rows.length === 0;
}

/** The demo accounts are there (their logins are worth printing). */
export async function hasDemoAccounts(): Promise<boolean> {
  const { rows } = await pool().query("SELECT 1 FROM users WHERE email = $1", [demoUsers[0].email]);
  return rows.length > 0;
}

export async function hasAnyUser(): Promise<boolean> {
  const { rows } = await pool().query("SELECT 1 FROM users LIMIT 1");
  return rows.length > 0;
}

async function main(): Promise<void> {
  const { openDatabase } = await import("../scripts/database");
  const database = await openDatabase();
  const started = Date.now();
  try {
    await seed(env().SEED_SCALE, await demoPassword());
    logger.info(
      `[seed] demo data ready in ${((Date.now() - started) / 1000).toFixed(1)} s; ` +
        (env().CONVEYOR_DEMO_PASSWORD ? "password: CONVEYOR_DEMO_PASSWORD" : `password in ${demoPasswordFile()}`),
    );
  } finally {
    await closeDb();
    await database.stop();
  }
}

if (process.argv[1] && /seed\.ts$/.test(process.argv[1])) {
  main().catch((err: Error) => {
    logger.fatal({ err }, `[seed] failed: ${err.message}`);
    process.exit(1);
  });
}
