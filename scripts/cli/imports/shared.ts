/**
 * What the `imports` commands share: their help, options, and how an import is followed and printed.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { ImportDto } from "@/lib/imports/service";
import { DEFAULT_URL, expectJson, oneLine, request, type Api } from "../api";

export const CHUNK_SIZE = 64 * 1024 * 1024;
export const POLL_MS = 500;
export const ENDED = new Set(["succeeded", "failed", "cancelled", "expired"]);
export const FORMATS = ["csv", "jsonl"] as const;
export const MODES = ["insert", "upsert"] as const;

export const connection = `  --url URL      the server (default: CONVEYOR_URL, else ${DEFAULT_URL})
  --token T      an API token (default: CONVEYOR_TOKEN); make one on the API tokens page or with
                 npm run cli -- tokens create --as <e-mail>`;

export const help = {
  imports: `usage: npm run cli -- imports <command> [options]
Imports a CSV or JSON Lines file into your tenant's customers, orders or events, through the HTTP API.
  create --file F --dataset D [--wait] …   upload F and import it (npm run cli -- imports create --help)
  get ID [--json]                          an import: its stages, counts and errors file
  list [--limit N] [--json]                your tenant's imports, newest first
  errors ID [--out FILE]                   download an import's errors file (CSV: line,column,reason,value)
Every command takes:
${connection}`,
  create: `usage: npm run cli -- imports create --file F --dataset customers|orders|events [options]
Uploads F (tus, in 64 MiB requests) and asks for its import; prints the import's id and URL.
  --file F            the CSV or JSON Lines file
  --dataset D         customers, orders or events
  --format csv|jsonl  default: from F's name (.csv; .jsonl or .ndjson)
  --mode insert|upsert  insert (default): every good row a new row; upsert: update rows the tenant has
                      (customers by email, orders and events by id), insert the rest
  --max-bad-rows N    bad rows allowed (left out, listed in the errors file) before the import fails (default 0)
  --wait              follow the import until it ends, printing each stage as it changes; exits 1 if it
                      failed or was cancelled, printing its error
  --json              print only the import as JSON (with --wait: as it ended)
${connection}`,
  get: `usage: npm run cli -- imports get ID [--json]
Prints an import: its request, file, stages (status, progress, attempts), counts, first bad rows, errors file.
  --json         the API's JSON (GET /api/v1/imports/{id})
${connection}`,
  list: `usage: npm run cli -- imports list [--limit N] [--json]
Lists your tenant's imports, newest first.
  --limit N      at most N (1-100, default 50)
  --json         the API's JSON (GET /api/v1/imports)
${connection}`,
  errors: `usage: npm run cli -- imports errors ID [--out FILE]
Downloads an import's errors file (CSV: line,column,reason,value), there once its parse stage ended.
  --out FILE     write it to FILE (default: stdout)
${connection}`,
};

export type Sub = keyof typeof help;

export const common = {
  url: { type: "string" },
  token: { type: "string" },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;

export const options = {
  create: {
    ...common,
    file: { type: "string" },
    dataset: { type: "string" },
    format: { type: "string" },
    mode: { type: "string" },
    "max-bad-rows": { type: "string" },
    wait: { type: "boolean" },
  },
  get: common,
  list: { ...common, limit: { type: "string" } },
  errors: { ...common, out: { type: "string" } },
} as const;

export type Values = {
  url?: string;
  token?: string;
  json?: boolean;
  help?: boolean;
  file?: string;
  dataset?: string;
  format?: string;
  mode?: string;
  "max-bad-rows"?: string;
  wait?: boolean;
  limit?: string;
  out?: string;
};

export const log = (line: string) => process.stderr.write(`${line}\n`);
export const num = (n: number | null | undefined) => (n === null || n === undefined ? "-" : n.toLocaleString("en"));

export const rowsOf = (n: number) => `${num(n)} ${n === 1 ? "row" : "rows"}`;

/** Bytes for people: 1.5 MB. */
export function bytes(n: number): string {
  if (n < 1_000) return `${n} B`;
  const units = ["kB", "MB", "GB", "TB"];
  let v = n;
  let u = -1;
  while (v >= 1_000 && u < units.length - 1) {
    v /= 1_000;
    u++;
  }
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[u]}`;
}

// ---------------------------------------------------------------------------------------------
// following an import

export const fetchImport = async (api: Api, id: string): Promise<ImportDto> =>
  expectJson<ImportDto>(await request(api, `/api/v1/imports/${id}`, { patient: true }), `GET /api/v1/imports/${id}`);

export type Seen = { status: string; done: number; total: number | null; step: number; attempts: number };

/**
 * Polls the import every 500 ms until it ended, printing (on stderr) each
 * stage whose status or progress changed: on a TTY every change, otherwise
 * status changes and every tenth of the way.
 */
export async function follow(api: Api, id: string, quiet: boolean): Promise<ImportDto> {
  const tty = Boolean(process.stderr.isTTY);
  const seen = new Map<string, Seen>();
  let heldBy = "";
  let open: string | null = null; // the stage whose line is still being drawn (a TTY)
  const stop = () => {
    log(`\nStopped following. The import goes on: npm run cli -- imports get ${id}`);
    process.exit(130);
  };
  process.once("SIGINT", stop);
  try {
    for (;;) {
      const imp = await fetchImport(api, id);
      if (!quiet) {
        // (The import's own status says little: it waits while its stages run. A pause that holds it does.)
        const pause = imp.job.pause && !ENDED.has(imp.job.status) ? imp.job.pause : null;
        const key = pause ? JSON.stringify(pause) : "";
        if (pause && key !== heldBy) {
          if (open) process.stderr.write("\n");
          open = null;
          log(`import    held by a pause${pause.reason ? `: ${oneLine(pause.reason)}` : ""}`);
        }
        heldBy = key;
        for (const s of imp.stages) {
          if (s.status === "pending") continue;
          const { done, total } = s.progress;
          const step = total ? Math.floor((done / total) * 10) : 0;
          const before = seen.get(s.name);
          const changed =
            !before ||
            before.status !== s.status ||
            before.attempts !== s.attempts ||
            (tty ? before.done !== done || before.total !== total : before.step !== step);
          if (!changed) continue;
          seen.set(s.name, { status: s.status, done, total, step, attempts: s.attempts });
          if (!tty) {
            log(stageLine(s));
            continue;
          }
          // On a TTY a running stage's line is redrawn in place; a new stage or status starts a new one.
          if (open === s.name) process.stderr.write(`\r${stageLine(s)}\x1b[K`);
          else process.stderr.write(`${open ? "\n" : ""}${stageLine(s)}`);
          open = s.name;
        }
      }
      if (ENDED.has(imp.job.status)) return imp;
      await sleep(POLL_MS);
    }
  } finally {
    if (open) process.stderr.write("\n");
    process.removeListener("SIGINT", stop);
  }
}

export type Stage = ImportDto["stages"][number];

/** `load      running    12,000 / 100,000 rows`, with the attempt and error of a retry. */
export function stageLine(s: Stage): string {
  const { done, total, unit } = s.progress;
  const progress = `${num(done)} / ${total === null ? "?" : num(total)}${unit ? ` ${unit}` : ""}`;
  const attempt = s.attempts > 1 ? ` (attempt ${s.attempts})` : "";
  // A retry's error (a failure's is the import's, printed last).
  const error = s.error && s.status === "retrying" ? `: ${oneLine(s.error)}` : "";
  return `${s.name.padEnd(9)} ${s.status.padEnd(10)} ${progress}${attempt}${error}`;
}

/** The counts known so far (those a stage that did not run would make are left out): `300 rows read, 2 rejected`. */
export const countsLine = (c: ImportDto["counts"]) =>
  (
    [
      [c.rowsRead, "rows read"],
      [c.inserted, "inserted"],
      [c.updated, "updated"],
      [c.rejected, "rejected"],
      [c.duplicates, "duplicates"],
    ] as const
  )
    .filter(([n]) => n !== null)
    .map(([n, what]) => `${num(n)} ${what}`)
    .join(", ") || "none yet";

/** What an import that ended came to: counts and errors file on stdout, a failure's error on stderr. */
export function printOutcome(api: Api, imp: ImportDto): void {
  const id = imp.job.id;
  const c = imp.counts;
  const anyCount = [c.rowsRead, c.inserted, c.updated, c.rejected, c.duplicates].some((v) => v !== null);
  console.log(`Import ${id} ${imp.job.status}${anyCount ? `: ${countsLine(c)}` : ""}`);
  if (imp.errorsFile) {
    console.log(
      `Errors file: ${api.base}${imp.errorsFile.url} (${rowsOf(imp.errorsFile.rows)}; ` +
        `npm run cli -- imports errors ${id} --out errors.csv)`,
    );
  }
  if (imp.job.status !== "succeeded") console.error(failure(imp));
}

/** The one line that says why an import did not succeed. */
export function failure(imp: ImportDto): string {
  const { status, error, cancelRequested } = imp.job;
  if (status === "cancelled") {
    const reason = cancelRequested?.reason ?? error?.message;
    return `The import was cancelled${cancelRequested?.by ? ` by ${cancelRequested.by}` : ""}${reason ? `: ${oneLine(reason)}` : ""}`;
  }
  return error?.message ? oneLine(error.message) : `The import ${status}`;
}

export const indent = (text: string) =>
  text
    .split("\n")
    .map((l) => `  ${l}`)
    .join("\n");

export const endedWell = (imp: ImportDto) => (imp.job.status === "succeeded" ? 0 : 1);

export const printJson = (v: unknown) => console.log(JSON.stringify(v, null, 2));
