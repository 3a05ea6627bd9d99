/**
 * Prisma CLI configuration. Prisma 6.19 with the JavaScript schema engine
 * (`engine: "js"`), so `prisma migrate` runs on the bundled WASM engine over
 * @prisma/adapter-pg and downloads nothing at run time.
 *
 * The CLI reads no `.env` when this file exists: DATABASE_URL comes from the
 * environment (scripts/migrate.ts sets it for the embedded Postgres).
 */
import { defineConfig } from "prisma/config";
import { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import { createRequire } from "node:module";

// Workaround (prisma/orm#27403): the schema engine reads catalog columns of
// type `name` (OID 19) and `"char"` (OID 18), which @prisma/adapter-pg refuses
// to map ("Column type 'name' could not be deserialized"). Both are plain text
// on the wire, so report them as `text` (OID 25). Affects this CLI process only.
const PG_TEXT_OID = 25;
const CATALOG_TEXT_OIDS = new Set([18, 19]);
type PgField = { dataTypeID: number; name: string };
const PgResult = createRequire(__filename)("pg/lib/result.js") as {
  prototype: { addFields(fields: PgField[]): void };
};
const addFields = PgResult.prototype.addFields;
// `"char"` columns (pg_constraint.contype, …) are read by the engine as one character: the names of
// the columns seen with that type are kept, and queryRaw reports them as Character (below).
// Without this, `prisma db pull` panics ("unreachable") on any table with a CHECK constraint.
const PG_CHAR_OID = 18;
const charColumns = new Set<string>();
// @prisma/driver-adapter-utils' ColumnTypeEnum (a dependency of the adapter, not of ours).
const ColumnTypeEnum = { Character: 6, Text: 7 } as const;
PgResult.prototype.addFields = function (fields: PgField[]) {
  for (const field of fields) {
    if (field.dataTypeID === PG_CHAR_OID) charColumns.add(field.name);
    if (CATALOG_TEXT_OIDS.has(field.dataTypeID)) field.dataTypeID = PG_TEXT_OID;
  }
  return addFields.call(this, fields);
};

// Workaround: the WASM schema engine leaves 10 s+ timers behind, so the CLI
// lingers long after "All migrations have been successfully applied". Long
// timers in this CLI process must not keep it alive on their own.
const LONG_TIMER_MS = 5_000;
const setTimeoutOriginal = globalThis.setTimeout;
globalThis.setTimeout = ((fn: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) => {
  const timer = setTimeoutOriginal(fn, ms, ...args);
  if ((ms ?? 0) >= LONG_TIMER_MS) timer.unref();
  return timer;
}) as typeof setTimeout;

function connectionFields(url: string): pg.PoolConfig {
  // Workaround: the adapter creates its shadow database with
  // `{ ...config, database }`; a connectionString would override that
  // database, so hand the pool discrete fields instead of the URL.
  const u = new URL(url);
  return {
    host: decodeURIComponent(u.hostname),
    port: u.port ? Number(u.port) : 5432,
    user: decodeURIComponent(u.username) || undefined,
    password: u.password ? decodeURIComponent(u.password) : undefined,
    database: decodeURIComponent(u.pathname.replace(/^\//, "")) || undefined,
    // Workaround: the CLI lingers ~60 s after finishing while idle pooled
    // connections keep the event loop alive; let them go at once.
    idleTimeoutMillis: 100,
    allowExitOnIdle: true,
  };
}

// Workaround: the CLI resolves `url = env("DATABASE_URL")` in the schema even
// for `prisma generate` (run by postinstall on a fresh machine where nothing is
// configured yet), and reads no .env file while this config exists. Commands
// that connect use `configuredUrl` below and fail clearly when it is unset.
const configuredUrl = process.env.DATABASE_URL;
process.env.DATABASE_URL ??= "postgresql://localhost:5432/conveyor_unset";

// Workaround: PrismaPgAdapter.executeScript splits a migration on every ";",
// which breaks plpgsql bodies ($$ … ; … $$) such as our jobs triggers. Postgres
// runs a multi-statement script in one simple-protocol query, as one implicit
// transaction, so send the script whole.
type ScriptAdapter = Awaited<ReturnType<PrismaPg["connect"]>>;
function runScriptsWhole(adapter: ScriptAdapter): ScriptAdapter {
  const queryRaw = adapter.queryRaw.bind(adapter);
  adapter.queryRaw = async (query) => {
    const result = await queryRaw(query);
    result.columnTypes = result.columnTypes.map((type, i) =>
      type === ColumnTypeEnum.Text && charColumns.has(result.columnNames[i]!) ? ColumnTypeEnum.Character : type,
    );
    return result;
  };
  adapter.executeScript = async (script: string) => {
    try {
      await adapter.underlyingDriver().query(script);
    } catch (error) {
      (adapter as unknown as { onError(e: unknown): never }).onError(error);
    }
  };
  return adapter;
}

class PrismaPgWholeScripts extends PrismaPg {
  override async connect() {
    return runScriptsWhole(await super.connect());
  }
  override async connectToShadowDb() {
    return runScriptsWhole(await super.connectToShadowDb());
  }
}

export default defineConfig({
  experimental: { adapter: true },
  engine: "js",
  schema: "prisma/schema.prisma",
  migrations: { path: "prisma/migrations" },
  async adapter() {
    const url = configuredUrl;
    if (!url) throw new Error("DATABASE_URL is not set (npm run db:migrate sets it for the embedded Postgres)");
    return new PrismaPgWholeScripts(connectionFields(url));
  },
});
