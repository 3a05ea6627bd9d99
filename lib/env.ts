/**
 * Configuration, read in one place. The only module that reads process.env.
 * Defaults make the embedded setup (`npm start` with nothing configured) work.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { z } from "zod";
import { parseTrustProxy } from "./net";

/** A whole number variable: its default, and the range it must be in. */
export const intFrom = (def: number, min: number, max: number) =>
  z.coerce.number().int().min(min).max(max).default(def);

/**
 * The most attempts one worker process may hold in flight: its memory bound (a waiting attempt is a
 * few kB: docs/BENCHMARKS.md, bench:capacity), beyond which a pool gives back-pressure instead.
 */
export const MAX_CONCURRENCY = 4_096;

const envSchema = z.object({
  NODE_ENV: z.enum(["development", "production", "test"]).default("development"),
  /** The least severe log records written: fatal, error, warn, info, debug, trace (silent: none). */
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  /** `json` (one JSON object a line) or `pretty` (readable, pino-pretty). Unset: `json` when NODE_ENV=production, else `pretty`. */
  LOG_FORMAT: z.enum(["json", "pretty"]).optional(),
  /** Postgres URL. Unset: `npm start` and `npm test` start an embedded Postgres. */
  DATABASE_URL: z.string().url().optional(),
  /**
   * A direct connection to the same database (not through a transaction-pooling PgBouncer) for what
   * needs a session of its own: the LISTEN clients, graphile-worker, migrations. Unset: DATABASE_URL.
   */
  DATABASE_DIRECT_URL: z.string().url().optional(),
  /**
   * A streaming replica of the same database (a hot standby): the console's lists, overview, charts
   * and GET /api/metrics read from it while it is reachable and within DATABASE_REPLICA_MAX_LAG_MS
   * (lib/read-db.ts); everything else, and a reader who wrote within that time, reads the primary.
   * Unset: every read goes to DATABASE_URL.
   */
  DATABASE_REPLICA_URL: z.string().url().optional(),
  /**
   * How far behind the primary the replica may be for reads to go to it, in ms (measured by comparing
   * the primary's flushed WAL position with the replica's replayed one); past it they fall back to the
   * primary. Also how long an operator's reads go to the primary after their own write.
   */
  DATABASE_REPLICA_MAX_LAG_MS: intFrom(5_000, 100, 600_000),
  /** Directory for local state: embedded Postgres data, exports, uploads, the generated auth secret. */
  CONVEYOR_DATA_DIR: z.string().default(".data"),
  /** Port of the embedded Postgres (only when DATABASE_URL is unset). */
  EMBEDDED_PG_PORT: intFrom(54329, 1024, 65535),
  /** HTTP port of the app. */
  PORT: intFrom(3000, 1, 65535),
  /** The interface the app listens on: this machine only by default; `0.0.0.0` (or `::`) for every interface (the image sets it). */
  HOST: z.string().min(1).max(255).default("127.0.0.1"),
  /** Secret for session cookies (Auth.js). `npm start` generates one under CONVEYOR_DATA_DIR if unset. */
  AUTH_SECRET: z.string().min(16).optional(),
  /** Where the local storage driver keeps export files. Default: <CONVEYOR_DATA_DIR>/exports. */
  EXPORT_STORAGE_DIR: z.string().optional(),
  /** Days an export's files are kept before they expire (a tenant may override). */
  EXPORT_RETENTION_DAYS: intFrom(7, 1, 3650),
  /** Where export files and uploads go: `local` (EXPORT_STORAGE_DIR, <CONVEYOR_DATA_DIR>/uploads) or `s3` (an S3-compatible bucket, S3_*). */
  STORAGE_DRIVER: z.enum(["local", "s3"]).default("local"),
  S3_BUCKET: z.string().min(3).optional(),
  S3_REGION: z.string().min(1).default("us-east-1"),
  /** An S3-compatible server's URL (MinIO, R2…); unset for AWS. */
  S3_ENDPOINT: z.url().optional(),
  S3_FORCE_PATH_STYLE: z
    .enum(["true", "false"])
    .transform((v) => v === "true")
    .optional(),
  /** Unset: the AWS SDK's default credential chain (environment, profile, instance role). */
  S3_ACCESS_KEY_ID: z.string().min(1).optional(),
  S3_SECRET_ACCESS_KEY: z.string().min(1).optional(),
  S3_PREFIX: z.string().optional(),
  /** Minimum interval between two progress writes of one job, in ms. */
  PROGRESS_INTERVAL_MS: intFrom(250, 50, 10_000),
  /**
   * Jobs one worker process runs at once (`npm run worker -- --concurrency N` overrides it): its cap on
   * attempts in flight. A waiting attempt holds no connection (docs/ARCHITECTURE.md, "Concurrency").
   */
  WORKER_CONCURRENCY: intFrom(4, 1, MAX_CONCURRENCY),
  /** Queues a worker process serves, comma-separated (`--queues` overrides it); they share its slots. Unset: every queue. */
  WORKER_QUEUES: z.string().optional(),
  /**
   * Default cap: jobs of one tenant admitted or running at once in the interactive queue. One less
   * than npm start's interactive pool (WORKER_CONCURRENCY, 4): one tenant's backlog never holds every
   * slot, so another tenant's request starts at once instead of after the first tenant's jobs end.
   */
  QUEUE_INTERACTIVE_TENANT_CAP: intFrom(3, 0, 100_000),
  /** Jobs of all tenants admitted or running at once in the interactive queue (graphile's runnable set). */
  QUEUE_INTERACTIVE_WINDOW: intFrom(32, 1, 100_000),
  /** Default cap: jobs of one tenant admitted or running at once in the bulk queue. */
  QUEUE_BULK_TENANT_CAP: intFrom(8, 0, 100_000),
  /** Jobs of all tenants admitted or running at once in the bulk queue. */
  QUEUE_BULK_WINDOW: intFrom(64, 1, 100_000),
  /** How often each worker's admitter sweeps every queue (due retries and schedules, missed wake-ups), in ms. */
  ADMISSION_SWEEP_MS: intFrom(1_000, 50, 60_000),
  /** On SIGTERM, how long running jobs may finish before they are aborted and handed back, in ms. */
  WORKER_SHUTDOWN_GRACE_MS: intFrom(10_000, 0, 600_000),
  /** How often a worker process records that it is alive, in ms. */
  WORKER_HEARTBEAT_MS: intFrom(2_000, 100, 60_000),
  /** A worker silent for this long is declared dead and its jobs are reaped, in ms. */
  WORKER_DEAD_AFTER_MS: intFrom(10_000, 500, 600_000),
  /** How often each worker runs the reaper (one at a time across the fleet), in ms. */
  REAPER_INTERVAL_MS: intFrom(1_000, 100, 60_000),
  /** `npm start` restarts a worker that exits after this long, doubling while it keeps dying young, in ms. */
  WORKER_RESTART_DELAY_MS: intFrom(1_000, 10, 600_000),
  /**
   * The CPU niceness `npm start` gives its worker processes (0–19; 0: the same as the web server's).
   * Background work then yields the cores to requests: with exports compressing on every core, a
   * user's page is answered first. Under a full load the workers still get about a third of the CPU
   * the web server gets (Linux weights 335 against 1024 at 5), so their leases are renewed.
   */
  WORKER_NICE: intFrom(5, 0, 19),
  /** The longest wait before `npm start` restarts a worker, in ms. */
  WORKER_RESTART_MAX_DELAY_MS: intFrom(30_000, 10, 3_600_000),
  /** Set by `npm start` for a worker it restarted: how many times it restarted this pool so far (recorded in the worker registry). */
  CONVEYOR_WORKER_RESTARTS: intFrom(0, 0, 1_000_000_000),
  /** Set by `npm start` for a worker it restarted: how the previous one ended (`SIGKILL`, `code 1`, `declared dead`). */
  CONVEYOR_WORKER_LAST_EXIT: z.string().min(1).max(100).optional(),
  /** How often each worker runs the console's statistics rollup (one at a time across the fleet), in ms. */
  STATS_ROLLUP_MS: intFrom(10_000, 1_000, 600_000),
  /** Days a finished job (succeeded, cancelled, expired, or failed and discarded) is kept with its attempts and transitions; a tenant's own value wins. */
  JOB_RETENTION_DAYS: intFrom(30, 1, 3650),
  /** Days a dead letter (a failed job not replayed or discarded) is kept; a tenant's own value wins. */
  DEAD_LETTER_RETENTION_DAYS: intFrom(90, 1, 3650),
  /** Days an audit entry is kept; a tenant's own value wins (platform entries: this). */
  AUDIT_RETENTION_DAYS: intFrom(365, 1, 3650),
  /** How often each worker runs the pruner (one at a time across the fleet), in ms. */
  PRUNE_INTERVAL_MS: intFrom(60_000, 1_000, 86_400_000),
  /** Root jobs (with their trees) the pruner deletes per transaction; each batch is one short transaction. */
  PRUNE_BATCH_SIZE: intFrom(1_000, 1, 100_000),
  /** How long one pruner tick may work before it leaves the rest for the next, in ms. */
  PRUNE_TICK_BUDGET_MS: intFrom(10_000, 100, 600_000),
  /** A bearer token that may scrape GET /api/metrics (platform admins may too). Unset: admins only. */
  METRICS_TOKEN: z.string().min(16).optional(),
  /** `1`: seed the demo tenants and accounts into the given (empty) database too; without it only the embedded one gets them. */
  CONVEYOR_DEMO: z.enum(["0", "1"]).default("0"),
  /**
   * The demo accounts' password when they are made. Unset: a random one, kept in
   * <CONVEYOR_DATA_DIR>/demo-password (mode 600) and printed by `npm start`; `conveyor-demo` is the documented one.
   */
  CONVEYOR_DEMO_PASSWORD: z.string().min(8).max(200).optional(),
  /** The app's public URL, for links in invitations. Default: http://localhost:<PORT>. */
  APP_URL: z.url().optional(),
  /** How invitations are sent: `log` (printed by the server, and shown to whoever invites) or `smtp` (SMTP_URL). */
  MAIL_TRANSPORT: z.enum(["log", "smtp"]).default("log"),
  /** smtp://user:password@host:587 (with MAIL_TRANSPORT=smtp). */
  SMTP_URL: z.url().optional(),
  /** The sender of invitation e-mails. */
  MAIL_FROM: z.string().min(3).default("Conveyor <conveyor@localhost>"),
  /**
   * The proxies in front of the app (lib/net.ts): `0` none (the connection's address; X-Forwarded-* ignored);
   * a number of hops (`1`: one load balancer) whose right-most X-Forwarded-For entries are theirs; or a
   * comma-separated list of the proxies' addresses and CIDR ranges (`10.0.0.0/8,fd00::/8`).
   */
  TRUST_PROXY: z
    .string()
    .default("0")
    .superRefine((v, ctx) => {
      try {
        parseTrustProxy(v);
      } catch (err) {
        ctx.addIssue({ code: "custom", message: (err as Error).message });
      }
    }),
  /** Failed sign-ins of one account from one address before it must wait (SIGN_IN_LOCK_SECONDS, doubling each further failure). */
  SIGN_IN_MAX_FAILURES: intFrom(5, 1, 1_000),
  /** The first wait after too many failed sign-ins, in seconds; it doubles with each further failure, up to 15 minutes. */
  SIGN_IN_LOCK_SECONDS: intFrom(60, 1, 86_400),
  /** Failed sign-ins from one address (any accounts) within 15 minutes before the address must wait 15 minutes. */
  SIGN_IN_ADDRESS_MAX_FAILURES: intFrom(50, 1, 100_000),
  /**
   * Failed sign-ins of one account within an hour, from any addresses, before each further try waits:
   * 1 s, doubling per failure, never more than SIGN_IN_ACCOUNT_MAX_DELAY_SECONDS (slowed, never locked out).
   */
  SIGN_IN_ACCOUNT_MAX_FAILURES: intFrom(20, 1, 100_000),
  /** The longest wait the per-account limit puts between two tries, in seconds. */
  SIGN_IN_ACCOUNT_MAX_DELAY_SECONDS: intFrom(60, 1, 3_600),
  /** Password hashes (scrypt, 32 MiB each) one process computes at once; further sign-ins wait their turn. */
  PASSWORD_HASH_CONCURRENCY: intFrom(2, 1, 64),
  /** Reads (GET, streams) per user per minute, fleet-wide (all their tokens and sessions together); 0 turns the limit off. */
  RATE_LIMIT_READS_PER_MINUTE: intFrom(1_200, 0, 1_000_000),
  /** Writes (every other method) per user per minute, fleet-wide (all their tokens and sessions together); 0 turns the limit off. */
  RATE_LIMIT_WRITES_PER_MINUTE: intFrom(300, 0, 1_000_000),
  /**
   * Requests without a principal (a bad token or session, an invitation's acceptance, a download
   * link, the API reference's script) per client address per minute, fleet-wide; 0 turns it off.
   */
  RATE_LIMIT_ANON_PER_MINUTE: intFrom(60, 0, 1_000_000),
  /**
   * The longest a process answers a rate-limit refusal from memory (scripts/serve.ts, before Next.js
   * and before any query) after Postgres refused that user's (or address's) budget, in ms: how stale
   * such a refusal may be. Within it a budget Postgres refused is refused again without asking;
   * past it (or past the wait Postgres named, if sooner) the next request asks Postgres again.
   */
  REFUSAL_MEMORY_MS: intFrom(1_000, 0, 60_000),
  /**
   * How long a refusal answered from memory is held before it is sent, in ms (never past the time the
   * budget frees). A client that floods with N requests at a time, each sent as the last is answered,
   * then gets N refusals a second instead of as many as the cores can answer: its flood stops costing
   * the other tenants' requests their CPU. A held refusal costs an idle socket, no work. 0: at once.
   */
  REFUSAL_HOLD_MS: intFrom(1_000, 0, 60_000),
  /**
   * API requests one user (all their tokens and sessions) has running at once in one web server
   * process; more wait their turn in memory, in order, before Next.js — so a user's flood runs a few
   * requests at a time and another user's request starts at once. Event streams, uploads and
   * downloads do not count. 0 turns the turn-taking off.
   */
  WEB_USER_CONCURRENCY: intFrom(2, 0, 1_000),
  /** Requests of one user that may wait their turn in one process; past it, 429 at once. */
  WEB_USER_QUEUE: intFrom(200, 0, 100_000),
  /**
   * Web server processes sharing the port (scripts/serve.ts, node:cluster); 0: one per core. Each
   * is a whole server (its own Next.js, pools and LISTEN connection); `npm run dev` runs one.
   */
  WEB_PROCESSES: intFrom(0, 0, 64),
  /** Live API tokens (neither revoked nor expired) one user may have, in all tenants together. */
  QUOTA_TOKENS_PER_USER: intFrom(50, 1, 100_000),
  /** Unfinished jobs (scheduled, queued, running, retrying) one user may have; a tenant's own value wins. */
  QUOTA_JOBS_PER_USER: intFrom(50, 1, 10_000_000),
  /** Unfinished jobs one tenant may have; a tenant's own value wins. */
  QUOTA_JOBS_PER_TENANT: intFrom(500, 1, 10_000_000),
  /** Bytes of export files a tenant may keep (until they expire or are deleted); a tenant's own value wins. */
  QUOTA_EXPORT_BYTES: z.coerce
    .number()
    .int()
    .min(0)
    .default(20 * 1024 ** 3),
  /** The largest upload (tus, /api/v1/uploads) one may declare, in bytes; a larger Upload-Length answers 413. */
  UPLOAD_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1)
    .default(2 * 1024 ** 3),
  /** An upload nobody touched (sent bytes, resumed, read it for an import) for this many hours is removed, whatever its state. */
  UPLOAD_UNUSED_HOURS: intFrom(24, 1, 24 * 365),
  /** Request bodies larger than this answer 413 before they are read, in bytes. */
  MAX_BODY_BYTES: intFrom(64 * 1024, 1_024, 100 * 1024 * 1024),
  /** Server-Sent Event streams one user may hold open at once, all their tokens and sessions together (fleet-wide). */
  SSE_MAX_STREAMS: intFrom(20, 1, 100_000),
  /** Server-Sent Event streams one tenant's users may hold open at once together (fleet-wide). */
  SSE_MAX_STREAMS_PER_TENANT: intFrom(200, 1, 1_000_000),
  /** How often an open stream re-checks its principal (a revoked token or a removed membership ends it), in ms. */
  SSE_RECHECK_MS: intFrom(30_000, 500, 300_000),
  /** `1`: the server `npm start` runs writes event streams straight to the socket (lib/http/sse-direct.ts); `0`: through Next.js's piping, as every other response (slower: for comparison). */
  SSE_DIRECT: z.enum(["0", "1"]).default("1"),
  /** `1`: the server `npm start` runs answers the API's hot routes (health, creating exports, reading jobs) with their handlers itself, once loaded (lib/http/api-direct.ts); `0`: through Next.js, as every other route (slower: for comparison). */
  API_DIRECT: z.enum(["0", "1"]).default("1"),
  /**
   * `1`: the statements every request or job runs (a token's lookup, a create's INSERT, reading a
   * job, claims, progress, heartbeats, successes) are prepared once per connection and their plans
   * kept; `0`: every statement is parsed and planned each time (a PgBouncer older than 1.21, or one
   * without `max_prepared_statements`, in front of the app server); `auto`: the app server and the
   * workers probe DATABASE_URL at start (settleStatements() in lib/pooler.ts) and name them only where a
   * client's named statement survives its transactions. `1` through a pooler that drops them refuses to start.
   */
  DATABASE_PREPARED_STATEMENTS: z.enum(["0", "1", "auto"]).default("auto"),
  /** A stream's longest life, in ms; then the client reconnects (with Last-Event-ID) and misses nothing. */
  SSE_MAX_LIFETIME_MS: intFrom(15 * 60_000, 5_000, 24 * 3_600_000),
  /** OpenTelemetry: the OTLP/HTTP collector's base URL (`http://collector:4318`); traces go to `<it>/v1/traces`. Unset: tracing is off (no spans, nothing stored). */
  OTEL_EXPORTER_OTLP_ENDPOINT: z.url().optional(),
  /** Headers sent with every OTLP export, `key=value,key2=value2` (a vendor's API key). */
  OTEL_EXPORTER_OTLP_HEADERS: z.string().optional(),
  /** The `service.name` of this process's spans. Default: `conveyor-web` for the app, `conveyor-worker` for workers. */
  OTEL_SERVICE_NAME: z.string().min(1).max(200).optional(),
  /** The share of new traces recorded, 0…1 (a trace begun upstream keeps its caller's decision). */
  OTEL_TRACES_SAMPLER_ARG: z.coerce.number().min(0).max(1).default(1),
  /** Rows of demo business data: 1 gives Acme 1,000,000 events and 100,000 orders. */
  SEED_SCALE: z.coerce.number().positive().max(100).default(1),
});

const checkedEnvSchema = envSchema.superRefine((v, ctx) => {
  if (v.STORAGE_DRIVER === "s3" && !v.S3_BUCKET) {
    ctx.addIssue({ code: "custom", path: ["S3_BUCKET"], message: "required when STORAGE_DRIVER=s3" });
  }
  if (v.MAIL_TRANSPORT === "smtp" && !v.SMTP_URL) {
    ctx.addIssue({ code: "custom", path: ["SMTP_URL"], message: "required when MAIL_TRANSPORT=smtp" });
  }
});

export type Env = z.infer<typeof envSchema>;

/** Every variable the configuration reads: deploy files may set only these (tests/unit/deploy.test.ts). */
export const envKeys: readonly string[] = Object.keys(envSchema.shape);

let cached: Env | undefined;
/** Bumped by resetEnvCache: every settings reader reads again after it. */
let generation = 0;

/** The parsed configuration; throws with the offending variable's name on bad input. */
export function env(): Env {
  if (cached) return cached;
  const parsed = checkedEnvSchema.safeParse(process.env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join(".")}: ${i.message}`);
    throw new Error(`Invalid configuration:\n${lines.join("\n")}`);
  }
  cached = parsed.data;
  return cached;
}

/**
 * The embedded Postgres that `npm start` runs when DATABASE_URL is unset. Its
 * password is random, made when the cluster is first initialised and kept in
 * the data directory (`<CONVEYOR_DATA_DIR>/pg-password`, readable by its owner
 * only); a cluster made before that kept `legacyPassword` until its next start.
 */
export const embeddedPostgres = { user: "postgres", database: "conveyor", legacyPassword: "conveyor" } as const;

/** Where the embedded cluster's password is kept, beside its data directory `pgDir`. */
export function embeddedPasswordFile(pgDir = path.join(dataDir(), "pg")): string {
  return `${pgDir}-password`;
}

/** The embedded cluster's password: from its file, or the legacy one for a cluster without a file. */
export function embeddedPassword(pgDir?: string): string {
  try {
    return readFileSync(embeddedPasswordFile(pgDir), "utf8").trim();
  } catch {
    return embeddedPostgres.legacyPassword;
  }
}

export function embeddedDatabaseUrl(
  database: string = embeddedPostgres.database,
  port = env().EMBEDDED_PG_PORT,
  password = embeddedPassword(),
): string {
  return `postgresql://${embeddedPostgres.user}:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`;
}

/**
 * The database URL: DATABASE_URL, or else the embedded Postgres of a running
 * `npm start` (so `npm run worker` can add workers beside it with nothing set).
 */
export function databaseUrl(): string {
  return env().DATABASE_URL ?? embeddedDatabaseUrl();
}

/**
 * The URL for connections that must be direct (LISTEN, graphile-worker, migrations' session
 * advisory lock): DATABASE_DIRECT_URL, else the same as databaseUrl(). See docs/DEPLOY.md.
 */
export function directDatabaseUrl(): string {
  return env().DATABASE_DIRECT_URL ?? databaseUrl();
}

/** The app's public base URL (no trailing slash), for links sent to people. */
export function appUrl(): string {
  return (env().APP_URL ?? `http://localhost:${env().PORT}`).replace(/\/+$/, "");
}

// The ignore comments: these paths are runtime state, not sources; without them Next's build traces
// the whole project into its standalone output (the container image's app).
export function dataDir(): string {
  return path.resolve(/*turbopackIgnore: true*/ env().CONVEYOR_DATA_DIR);
}

export function exportStorageDir(): string {
  return path.resolve(/*turbopackIgnore: true*/ env().EXPORT_STORAGE_DIR ?? path.join(dataDir(), "exports"));
}

/** Where the local disk keeps uploads (tus) while they arrive and until an import is done with them. */
export function uploadStorageDir(): string {
  return path.join(dataDir(), "uploads");
}

/** For tests and scripts that change process.env after the first read. */
export function resetEnvCache(): void {
  cached = undefined;
  generation++;
}

/**
 * A part of the configuration that a workload declares in its own folder (its EXPORT_*,
 * IMPORT_*, WEBHOOK_* … variables): calling it reads and validates them, cached like env().
 * The manifest lists it (`settings`), so the registry knows every variable (settingKeys) and
 * a process validates all of them at start (checkSettings).
 */
export type Settings<T> = (() => T) & { readonly keys: readonly string[] };

/** Declares a workload's variables; `check` adds rules across them. This module stays the only reader of process.env. */
export function defineSettings<S extends z.ZodRawShape>(
  shape: S,
  check?: (v: z.infer<z.ZodObject<S>>, ctx: z.RefinementCtx) => void,
): Settings<z.infer<z.ZodObject<S>>> {
  const schema = z.object(shape);
  const checked = check ? schema.superRefine(check) : schema;
  let value: { generation: number; data: z.infer<z.ZodObject<S>> } | undefined;
  const read = () => {
    if (value?.generation === generation) return value.data;
    const parsed = checked.safeParse(process.env);
    if (!parsed.success) {
      const lines = parsed.error.issues.map((i) => `  ${i.path.join(".")}: ${i.message}`);
      throw new Error(`Invalid configuration:\n${lines.join("\n")}`);
    }
    value = { generation, data: parsed.data as z.infer<z.ZodObject<S>> };
    return value.data;
  };
  return Object.assign(read, { keys: Object.keys(shape) });
}
