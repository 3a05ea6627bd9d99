/**
 * `npm run cli -- imports …`: imports through the public HTTP API, as any API
 * client would (docs/API.md, "Uploads (tus 1.0)" and "Imports"), so a user with
 * a token imports from their own machine. No database here.
 *   create   the file over tus (tus-js-client, 64 MiB PATCHes), then POST /api/v1/imports;
 *            --wait follows GET /api/v1/imports/{id} every 500 ms until it ended
 *   get, list, errors   GET /api/v1/imports/{id}, /api/v1/imports, /api/v1/imports/{id}/errors
 * Output: results (ids, URLs, counts, tables, JSON) on stdout; progress (upload,
 * stages) on stderr; an error is one line on stderr and a non-zero exit (2 for a
 * usage mistake, 1 for the rest, a failed or cancelled import included).
 */
import { createReadStream, createWriteStream } from "node:fs";
import { stat } from "node:fs/promises";
import { once } from "node:events";
import path from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import * as tus from "tus-js-client";
import type { ImportDto } from "@/lib/imports/service";
import { datasetNames } from "@/lib/tenants/datasets";
import {
  apiFrom,
  CliError,
  DEFAULT_URL,
  describeError,
  expectJson,
  expectOk,
  oneLine,
  request,
  UsageError,
  type Api,
} from "./api";
import { table } from "./table";

const CHUNK_SIZE = 64 * 1024 * 1024;
const POLL_MS = 500;
const ENDED = new Set(["succeeded", "failed", "cancelled", "expired"]);
const FORMATS = ["csv", "jsonl"] as const;
const MODES = ["insert", "upsert"] as const;

const connection = `  --url URL      the server (default: CONVEYOR_URL, else ${DEFAULT_URL})
  --token T      an API token (default: CONVEYOR_TOKEN); make one on the API tokens page or with
                 npm run cli -- tokens create --as <e-mail>`;

const help = {
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

type Sub = keyof typeof help;

const common = {
  url: { type: "string" },
  token: { type: "string" },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;

const options = {
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

type Values = {
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

const log = (line: string) => process.stderr.write(`${line}\n`);
const num = (n: number | null | undefined) => (n === null || n === undefined ? "-" : n.toLocaleString("en"));

const rowsOf = (n: number) => `${num(n)} ${n === 1 ? "row" : "rows"}`;

/** Bytes for people: 1.5 MB. */
function bytes(n: number): string {
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

/** The one positional argument of get and errors: the import's id. */
function idOf(positionals: string[], sub: Sub): string {
  if (positionals.length !== 1 || !positionals[0]) throw new UsageError(`imports ${sub}: give the import's id`);
  return encodeURIComponent(positionals[0]);
}

export async function main(argv: string[]): Promise<number> {
  const sub = argv[0];
  if (!sub || sub === "--help" || sub === "-h" || sub === "help") {
    (sub ? console.log : console.error)(help.imports);
    return sub ? 0 : 2;
  }
  if (!(sub in options)) {
    console.error(`imports: unknown command ${sub}\n${help.imports}`);
    return 2;
  }
  const name = sub as keyof typeof options;
  try {
    let parsed;
    try {
      parsed = parseArgs({ args: argv.slice(1), options: options[name], allowPositionals: true, strict: true });
    } catch (err) {
      // node:util's messages run long ("Unknown option '--x'. To specify a positional argument …"): their first sentence.
      const message = (err as Error).message
        .split("\n")[0]!
        .replace(/^Unknown option '([^']+)'.*$/, "unknown option $1");
      throw new UsageError(`imports ${name}: ${message} (npm run cli -- imports ${name} --help)`);
    }
    const values = parsed.values as Values;
    if (values.help) {
      console.log(help[name]);
      return 0;
    }
    if (name !== "get" && name !== "errors" && parsed.positionals.length) {
      throw new UsageError(`imports ${name}: unexpected argument ${parsed.positionals[0]}`);
    }
    switch (name) {
      case "create":
        return await create(values);
      case "get":
        return await get(values, idOf(parsed.positionals, name));
      case "list":
        return await list(values);
      case "errors":
        return await errors(values, idOf(parsed.positionals, name));
    }
  } catch (err) {
    if (err instanceof CliError) {
      console.error(err.message);
      return err.exitCode;
    }
    throw err;
  }
}

// ---------------------------------------------------------------------------------------------
// create

type CreateRequest = {
  file: string;
  size: number;
  dataset: string;
  format: (typeof FORMATS)[number];
  mode: (typeof MODES)[number];
  maxBadRows: number;
};

/** The options of `create`, checked before a byte is sent. */
async function createRequest(values: Values): Promise<CreateRequest> {
  const file = values.file;
  if (!file) throw new UsageError("imports create: --file is required");
  const dataset = values.dataset;
  if (!dataset) throw new UsageError("imports create: --dataset is required");
  if (!(datasetNames as readonly string[]).includes(dataset)) {
    throw new UsageError(`imports create: --dataset must be one of ${datasetNames.join(", ")}`);
  }
  let format = values.format;
  if (format === undefined) {
    const ext = path.extname(file).toLowerCase();
    format = ext === ".csv" ? "csv" : ext === ".jsonl" || ext === ".ndjson" ? "jsonl" : undefined;
    if (!format) {
      throw new UsageError(
        `imports create: cannot tell the format of ${path.basename(file)} from its name: pass --format csv or --format jsonl`,
      );
    }
  }
  if (!(FORMATS as readonly string[]).includes(format)) {
    throw new UsageError("imports create: --format must be csv or jsonl");
  }
  const mode = values.mode ?? "insert";
  if (!(MODES as readonly string[]).includes(mode))
    throw new UsageError("imports create: --mode must be insert or upsert");
  const rawBad = values["max-bad-rows"] ?? "0";
  if (!/^\d+$/.test(rawBad)) throw new UsageError("imports create: --max-bad-rows must be a whole number, 0 or more");
  let info;
  try {
    info = await stat(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new CliError(code === "ENOENT" ? `${file}: no such file` : `${file}: ${(err as Error).message}`);
  }
  if (!info.isFile()) throw new CliError(`${file}: not a file`);
  return {
    file,
    size: info.size,
    dataset,
    format: format as CreateRequest["format"],
    mode: mode as CreateRequest["mode"],
    maxBadRows: Number(rawBad),
  };
}

async function create(values: Values): Promise<number> {
  const req = await createRequest(values);
  const api = apiFrom(values);
  const quiet = Boolean(values.json);
  const uploadId = await upload(api, req, quiet);
  const res = await request(api, "/api/v1/imports", {
    method: "POST",
    body: { uploadId, dataset: req.dataset, format: req.format, mode: req.mode, maxBadRows: req.maxBadRows },
  });
  if (!res.ok) {
    const why = describeError(res.status, await res.text().catch(() => ""));
    // Nothing will read the upload now: give its bytes (and the tenant's quota) back at once.
    await request(api, `/api/v1/uploads/${uploadId}`, { method: "DELETE", headers: { "Tus-Resumable": "1.0.0" } })
      .then((r) => r.body?.cancel())
      .catch(() => {});
    throw new CliError(`The import was refused: ${why}`);
  }
  const { id } = (await res.json()) as { id: string };
  const url = `${api.base}/api/v1/imports/${id}`;
  if (!values.wait) {
    if (quiet) {
      printJson(await fetchImport(api, id));
    } else {
      console.log(`Import ${id} queued: ${url}`);
      log(`Follow it with: npm run cli -- imports get ${id}`);
    }
    return 0;
  }
  if (!quiet) console.log(`Import ${id} queued: ${url}`);
  const imp = await follow(api, id, quiet);
  if (quiet) printJson(imp);
  else printOutcome(api, imp);
  return endedWell(imp);
}

/** Sends the file over tus; answers the upload's id. Progress on stderr: live on a TTY, else every 10%. */
function upload(api: Api, req: CreateRequest, quiet: boolean): Promise<string> {
  const name = path.basename(req.file);
  const tty = Boolean(process.stderr.isTTY);
  let lastStep = -1;
  let lastDraw = 0;
  const progress = (sent: number, total: number) => {
    if (quiet) return;
    const pct = total ? Math.floor((sent / total) * 100) : 100;
    const text = `Uploading ${name}: ${pct}% (${bytes(sent)} of ${bytes(total)})`;
    if (tty) {
      const now = Date.now();
      if (sent < total && now - lastDraw < 100) return;
      lastDraw = now;
      process.stderr.write(`\r${text}\x1b[K`);
    } else {
      const step = Math.floor(pct / 10);
      if (step === lastStep) return;
      lastStep = step;
      log(text);
    }
  };
  return new Promise((resolve, reject) => {
    const stream = createReadStream(req.file);
    const u = new tus.Upload(stream, {
      endpoint: `${api.base}/api/v1/uploads`,
      uploadSize: req.size,
      chunkSize: CHUNK_SIZE,
      headers: { Authorization: `Bearer ${api.token}` },
      metadata: { filename: name, filetype: req.format === "csv" ? "text/csv" : "application/jsonl" },
      retryDelays: [0, 1_000, 3_000, 10_000, 30_000],
      onShouldRetry: (err) => {
        const res = err.originalResponse;
        if (!res) return true; // the connection dropped: ask HEAD where it got to, go on from there
        const status = res.getStatus();
        if (status === 429) return /"rate_limited"/.test(res.getBody() ?? ""); // not a quota
        return status === 409 || status === 423 || status >= 500;
      },
      onProgress: progress,
      onSuccess: () => {
        if (!quiet && tty) process.stderr.write("\n");
        if (!quiet) log(`Uploaded ${name} (${bytes(req.size)})`);
        resolve(u.url!.split("/").pop()!);
      },
      onError: (err) => {
        stream.destroy();
        if (!quiet && tty) process.stderr.write("\n");
        reject(new CliError(`The upload of ${name} failed: ${tusError(api, err)}`));
      },
    });
    u.start();
  });
}

/** A tus-js-client error as one line: the API's own message when the server answered. */
function tusError(api: Api, err: Error): string {
  const res = (err as tus.DetailedError).originalResponse;
  if (res) return describeError(res.getStatus(), res.getBody() ?? "");
  const cause = (err as tus.DetailedError).causingError;
  if (cause && /ECONNREFUSED|ENOTFOUND|EAI_AGAIN/.test(cause.message)) {
    return `cannot reach ${api.base}: ${cause.message} (is the server running? Set it with --url or CONVEYOR_URL)`;
  }
  return oneLine(cause?.message ?? err.message);
}

// ---------------------------------------------------------------------------------------------
// following an import

const fetchImport = async (api: Api, id: string): Promise<ImportDto> =>
  expectJson<ImportDto>(await request(api, `/api/v1/imports/${id}`, { patient: true }), `GET /api/v1/imports/${id}`);

type Seen = { status: string; done: number; total: number | null; step: number; attempts: number };

/**
 * Polls the import every 500 ms until it ended, printing (on stderr) each
 * stage whose status or progress changed: on a TTY every change, otherwise
 * status changes and every tenth of the way.
 */
async function follow(api: Api, id: string, quiet: boolean): Promise<ImportDto> {
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

type Stage = ImportDto["stages"][number];

/** `load      running    12,000 / 100,000 rows`, with the attempt and error of a retry. */
function stageLine(s: Stage): string {
  const { done, total, unit } = s.progress;
  const progress = `${num(done)} / ${total === null ? "?" : num(total)}${unit ? ` ${unit}` : ""}`;
  const attempt = s.attempts > 1 ? ` (attempt ${s.attempts})` : "";
  // A retry's error (a failure's is the import's, printed last).
  const error = s.error && s.status === "retrying" ? `: ${oneLine(s.error)}` : "";
  return `${s.name.padEnd(9)} ${s.status.padEnd(10)} ${progress}${attempt}${error}`;
}

/** The counts known so far (those a stage that did not run would make are left out): `300 rows read, 2 rejected`. */
const countsLine = (c: ImportDto["counts"]) =>
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
function printOutcome(api: Api, imp: ImportDto): void {
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
function failure(imp: ImportDto): string {
  const { status, error, cancelRequested } = imp.job;
  if (status === "cancelled") {
    const reason = cancelRequested?.reason ?? error?.message;
    return `The import was cancelled${cancelRequested?.by ? ` by ${cancelRequested.by}` : ""}${reason ? `: ${oneLine(reason)}` : ""}`;
  }
  return error?.message ? oneLine(error.message) : `The import ${status}`;
}

const indent = (text: string) =>
  text
    .split("\n")
    .map((l) => `  ${l}`)
    .join("\n");

const endedWell = (imp: ImportDto) => (imp.job.status === "succeeded" ? 0 : 1);

const printJson = (v: unknown) => console.log(JSON.stringify(v, null, 2));

// ---------------------------------------------------------------------------------------------
// get, list, errors

async function get(values: Values, id: string): Promise<number> {
  const api = apiFrom(values);
  const imp = await expectJson<ImportDto>(await request(api, `/api/v1/imports/${id}`), "Cannot get the import");
  if (values.json) {
    printJson(imp);
    return 0;
  }
  const r = imp.request;
  const j = imp.job;
  const lines = [
    `Import ${j.id}: ${j.status}${j.admission ? ` (${j.admission})` : ""}`,
    `  request   ${r.dataset}, ${r.format}, ${r.mode}, maxBadRows ${num(r.maxBadRows)}; upload ${r.uploadId}`,
    `  created   ${j.createdAt}${j.requestedBy ? ` by ${j.requestedBy}` : ""}` +
      (j.finishedAt ? `; ended ${j.finishedAt}` : j.startedAt ? `; started ${j.startedAt}` : ""),
  ];
  if (imp.importId !== j.id) lines.push(`  replays   import ${imp.importId}`);
  if (imp.file) {
    lines.push(
      `  file      ${bytes(imp.file.size)}, ${num(imp.file.rows)} rows, columns ${imp.file.columns.join(",")}, sha256 ${imp.file.sha256}`,
    );
  }
  lines.push(
    "",
    indent(
      table(
        ["STAGE", "STATUS", "PROGRESS", "ATTEMPTS", "STARTED", "ENDED", "ERROR"],
        imp.stages.map((s) => [
          s.name,
          s.status,
          `${num(s.progress.done)} / ${s.progress.total === null ? "?" : num(s.progress.total)} ${s.progress.unit ?? ""}`.trim(),
          String(s.attempts),
          s.startedAt ?? "-",
          s.finishedAt ?? "-",
          s.error ? oneLine(s.error).slice(0, 120) : "",
        ]),
      ),
    ),
    "",
    `  counts    ${countsLine(imp.counts)}`,
  );
  for (const b of imp.badRows) lines.push(`  bad row   line ${b.line}, ${b.column}: ${oneLine(b.reason)}`);
  if (imp.errorsFile) {
    lines.push(
      `  errors    ${api.base}${imp.errorsFile.url} (${rowsOf(imp.errorsFile.rows)}, ${bytes(imp.errorsFile.size)}, until ${imp.errorsFile.expiresAt})`,
    );
  }
  if (j.status !== "succeeded" && ENDED.has(j.status)) lines.push(`  error     ${failure(imp)}`);
  console.log(lines.join("\n"));
  return 0;
}

async function list(values: Values): Promise<number> {
  const api = apiFrom(values);
  let query = "";
  if (values.limit !== undefined) {
    const n = Number(values.limit);
    if (!Number.isInteger(n) || n < 1 || n > 100) throw new UsageError("imports list: --limit must be 1 to 100");
    query = `?limit=${n}`;
  }
  const body = await expectJson<{ imports: ImportDto[] }>(
    await request(api, `/api/v1/imports${query}`),
    "Cannot list the imports",
  );
  if (values.json) {
    printJson(body);
    return 0;
  }
  if (!body.imports.length) {
    log("No imports.");
    return 0;
  }
  console.log(
    table(
      ["ID", "CREATED", "STATUS", "STAGE", "DATASET", "MODE", "READ", "INSERTED", "UPDATED", "REJECTED"],
      body.imports.map((imp) => [
        imp.job.id,
        imp.job.createdAt,
        imp.job.status,
        imp.stages.find((s) => s.status !== "succeeded" && s.status !== "pending")?.name ?? "-",
        imp.request.dataset,
        imp.request.mode,
        num(imp.counts.rowsRead),
        num(imp.counts.inserted),
        num(imp.counts.updated),
        num(imp.counts.rejected),
      ]),
    ),
  );
  return 0;
}

async function errors(values: Values, id: string): Promise<number> {
  if (values.json) throw new UsageError("imports errors: the errors file is CSV (no --json)");
  const api = apiFrom(values);
  const res = await request(api, `/api/v1/imports/${id}/errors`);
  await expectOk(res, "Cannot download the errors file");
  if (!res.body) throw new CliError("Cannot download the errors file: the answer had no body");
  const body = Readable.fromWeb(res.body as import("node:stream/web").ReadableStream<Uint8Array>);
  if (values.out) {
    try {
      await pipeline(body, createWriteStream(values.out));
    } catch (err) {
      throw new CliError(`Cannot write ${values.out}: ${(err as Error).message}`);
    }
    log(`Wrote the errors file (${bytes((await stat(values.out)).size)}) to ${values.out}`);
    return 0;
  }
  for await (const chunk of body) {
    if (!process.stdout.write(chunk as Buffer)) await once(process.stdout, "drain");
  }
  return 0;
}
