/**
 * Configuration, read in one place. The only module that reads process.env.
 * Defaults make the embedded setup (`npm start` with nothing configured) work.
 */
import path from "node:path";
import { z } from "zod";

const intFrom = (def: number, min: number, max: number) => z.coerce.number().int().min(min).max(max).default(def);

const envSchema = z.object({
  NODE_ENV: z.enum(["development", "production", "test"]).default("development"),
  /** Postgres URL. Unset: `npm start` and `npm test` start an embedded Postgres. */
  DATABASE_URL: z.string().url().optional(),
  /** Directory for local state: embedded Postgres data, exports, the generated auth secret. */
  CONVEYOR_DATA_DIR: z.string().default(".data"),
  /** Port of the embedded Postgres (only when DATABASE_URL is unset). */
  EMBEDDED_PG_PORT: intFrom(54329, 1024, 65535),
  /** HTTP port of the app. */
  PORT: intFrom(3000, 1, 65535),
  /** Secret for session cookies (Auth.js). `npm start` generates one under CONVEYOR_DATA_DIR if unset. */
  AUTH_SECRET: z.string().min(16).optional(),
  /** Where the local storage driver keeps export files. Default: <CONVEYOR_DATA_DIR>/exports. */
  EXPORT_STORAGE_DIR: z.string().optional(),
  /** Days an export's files are kept before they expire (a tenant may override). */
  EXPORT_RETENTION_DAYS: intFrom(7, 1, 3650),
  /** gzip level for compressed exports: 1 is fastest, 9 smallest. */
  EXPORT_GZIP_LEVEL: intFrom(1, 1, 9),
  /** Where export files go: `local` (EXPORT_STORAGE_DIR) or `s3` (an S3-compatible bucket, S3_*). */
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
  /** Target rows per part of an export; one estimated larger is split into parts run in parallel. */
  EXPORT_PART_ROWS: intFrom(250_000, 1_000, 100_000_000),
  /** Minimum interval between two progress writes of one job, in ms. */
  PROGRESS_INTERVAL_MS: intFrom(250, 50, 10_000),
  /** Jobs one worker process runs at once (`npm run worker -- --concurrency N` overrides it). */
  WORKER_CONCURRENCY: intFrom(4, 1, 64),
  /** Queues a worker process serves, comma-separated (`--queues` overrides it); they share its slots. */
  WORKER_QUEUES: z.string().default("interactive,bulk"),
  /** Default cap: jobs of one tenant admitted or running at once in the interactive queue. */
  QUEUE_INTERACTIVE_TENANT_CAP: intFrom(4, 0, 100_000),
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
  /** How often each worker runs the export expiry cleanup (one at a time across the fleet), in ms. */
  EXPORT_CLEANUP_MS: intFrom(60_000, 1_000, 3_600_000),
  /** How often each worker runs the console's statistics rollup (one at a time across the fleet), in ms. */
  STATS_ROLLUP_MS: intFrom(10_000, 1_000, 600_000),
  /** A bearer token that may scrape GET /api/metrics (platform admins may too). Unset: admins only. */
  METRICS_TOKEN: z.string().min(16).optional(),
  /** Rows of demo business data: 1 gives Acme 1,000,000 events and 100,000 orders. */
  SEED_SCALE: z.coerce.number().positive().max(100).default(1),
});

const checkedEnvSchema = envSchema.superRefine((v, ctx) => {
  if (v.STORAGE_DRIVER === "s3" && !v.S3_BUCKET) {
    ctx.addIssue({ code: "custom", path: ["S3_BUCKET"], message: "required when STORAGE_DRIVER=s3" });
  }
});

export type Env = z.infer<typeof envSchema>;

let cached: Env | undefined;

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

/** The database URL, or a clear error when nothing set it. */
/** The embedded Postgres that `npm start` runs when DATABASE_URL is unset. */
export const embeddedPostgres = { user: "postgres", password: "conveyor", database: "conveyor" } as const;

export function embeddedDatabaseUrl(
  database: string = embeddedPostgres.database,
  port = env().EMBEDDED_PG_PORT,
): string {
  const { user, password } = embeddedPostgres;
  return `postgresql://${user}:${password}@127.0.0.1:${port}/${database}`;
}

/**
 * The database URL: DATABASE_URL, or else the embedded Postgres of a running
 * `npm start` (so `npm run worker` can add workers beside it with nothing set).
 */
export function databaseUrl(): string {
  return env().DATABASE_URL ?? embeddedDatabaseUrl();
}

export function dataDir(): string {
  return path.resolve(env().CONVEYOR_DATA_DIR);
}

export function exportStorageDir(): string {
  return path.resolve(env().EXPORT_STORAGE_DIR ?? path.join(dataDir(), "exports"));
}

/** For tests and scripts that change process.env after the first read. */
export function resetEnvCache(): void {
  cached = undefined;
}
