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
import { createWriteStream } from "node:fs";
import { stat } from "node:fs/promises";
import { once } from "node:events";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { parseArgs } from "node:util";
import type { ImportDto } from "@/lib/imports/service";
import { apiFrom, CliError, expectJson, expectOk, oneLine, request, UsageError } from "../api";
import { table } from "../table";
import { create } from "./create";
import {
  ENDED,
  help,
  type Sub,
  options,
  type Values,
  log,
  num,
  rowsOf,
  bytes,
  countsLine,
  failure,
  indent,
  printJson,
} from "./shared";
import { stateLabel } from "@/lib/jobs/states";

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
    `Import ${j.id}: ${stateLabel(j.status)}${j.admission ? ` (${j.admission})` : ""}`,
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
          stateLabel(s.status),
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
        stateLabel(imp.job.status),
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
