/** `imports create`: the file over tus, then POST /api/v1/imports; --wait follows it to its end. */
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import path from "node:path";
import * as tus from "tus-js-client";
import { datasetNames } from "@/lib/tenants/datasets";
import { apiFrom, CliError, describeError, oneLine, request, UsageError, type Api } from "../api";
import {
  CHUNK_SIZE,
  FORMATS,
  MODES,
  type Values,
  log,
  bytes,
  fetchImport,
  follow,
  printOutcome,
  endedWell,
  printJson,
} from "./shared";

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

export async function create(values: Values): Promise<number> {
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
