/**
 * The CLI's client of the public HTTP API: the server from `--url` or CONVEYOR_URL
 * (default http://localhost:3000), an API token from `--token` or CONVEYOR_TOKEN,
 * and the API's errors as one line each.
 */
import { setTimeout as sleep } from "node:timers/promises";

/** A failure to report as one line on stderr; `exitCode` 2 for a usage mistake. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

/** A usage mistake (a missing or bad option): exit code 2. */
export class UsageError extends CliError {
  constructor(message: string) {
    super(message, 2);
  }
}

export const DEFAULT_URL = "http://localhost:3000";

export type Api = { base: string; token: string };

/** The server and token to use, from the options or the environment. */
export function apiFrom(values: { url?: string; token?: string }): Api {
  const raw = values.url ?? process.env.CONVEYOR_URL ?? DEFAULT_URL;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`--url: not a URL: ${raw}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new UsageError(`--url: not an http(s) URL: ${raw}`);
  const token = values.token ?? process.env.CONVEYOR_TOKEN;
  if (!token) {
    throw new UsageError(
      "no API token: pass --token or set CONVEYOR_TOKEN (make one on the API tokens page, or with " +
        "npm run cli -- tokens create --as <e-mail>)",
    );
  }
  url.search = "";
  url.hash = "";
  return { base: url.toString().replace(/\/+$/, ""), token };
}

/** Text on one line (an error message from a server may hold newlines). */
export const oneLine = (s: string): string => s.replace(/\s*\n\s*/g, " ").trim();

type ApiErrorBody = { error?: { code?: unknown; message?: unknown; fields?: unknown } };

/**
 * An error answer as one line: the API's message, its status and code, and the
 * paths of the fields it names (`Invalid input: maxBadRows: … (HTTP 400 invalid_input; fields: maxBadRows)`).
 */
export function describeError(status: number, body: string): string {
  let parsed: ApiErrorBody | null = null;
  try {
    parsed = JSON.parse(body) as ApiErrorBody;
  } catch {
    /* not the API's JSON (a proxy's page, say) */
  }
  const e = parsed?.error;
  if (e && typeof e.message === "string") {
    const fields = Array.isArray(e.fields)
      ? e.fields.map((f: { path?: unknown }) => f?.path).filter((p): p is string => typeof p === "string")
      : [];
    const code = typeof e.code === "string" ? ` ${e.code}` : "";
    return `${oneLine(e.message)} (HTTP ${status}${code}${fields.length ? `; fields: ${fields.join(", ")}` : ""})`;
  }
  const text = oneLine(body).slice(0, 200);
  return `the server answered HTTP ${status}${text ? `: ${text}` : ""}`;
}

/** Why a request never got an answer, in a line (ECONNREFUSED → is the server running?). */
function unreachable(api: Api, err: unknown): CliError {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  const why = cause?.code ?? cause?.message ?? (err as Error).message;
  return new CliError(`cannot reach ${api.base}: ${why} (is the server running? Set it with --url or CONVEYOR_URL)`);
}

export type RequestOptions = {
  method?: "GET" | "POST" | "DELETE";
  body?: unknown;
  headers?: Record<string, string>;
  /**
   * For reads that may be repeated (polling): wait out a 429's Retry-After, and
   * try again a few times after a 502/503/504 or a dropped connection.
   */
  patient?: boolean;
};

/** One request to the API, as the token's user. Answers any status; `expectOk` turns errors into CliErrors. */
export async function request(api: Api, path: string, opts: RequestOptions = {}): Promise<Response> {
  const headers: Record<string, string> = { Authorization: `Bearer ${api.token}`, ...opts.headers };
  if (opts.body !== undefined) headers["Content-Type"] = "application/json";
  for (let attempt = 1; ; attempt++) {
    let res: Response;
    try {
      res = await fetch(`${api.base}${path}`, {
        method: opts.method ?? "GET",
        headers,
        body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
      });
    } catch (err) {
      if (opts.patient && attempt < 5) {
        await sleep(1_000 * attempt);
        continue;
      }
      throw unreachable(api, err);
    }
    if (opts.patient && attempt < 5 && [429, 502, 503, 504].includes(res.status)) {
      const retryAfter = Number(res.headers.get("retry-after"));
      await res.body?.cancel();
      await sleep(Number.isFinite(retryAfter) && retryAfter > 0 ? Math.min(retryAfter, 60) * 1_000 : 1_000 * attempt);
      continue;
    }
    return res;
  }
}

/** The answer's JSON, or a CliError with the API's message (prefixed by `what` failed). */
export async function expectJson<T>(res: Response, what: string): Promise<T> {
  await expectOk(res, what);
  return (await res.json()) as T;
}

/** Throws a CliError with the API's message unless the answer is 2xx. */
export async function expectOk(res: Response, what: string): Promise<void> {
  if (res.ok) return;
  throw new CliError(`${what}: ${describeError(res.status, await res.text().catch(() => ""))}`);
}
