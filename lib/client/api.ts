/**
 * Browser-side fetchers and query keys. Errors carry the API's message and
 * field paths so forms can show them next to their fields.
 */
import type { JobDto } from "../jobs/dto";
import type { TokenDto } from "../auth/tokens";
import type { getJobHistory } from "../jobs/history";
import type { PauseDto } from "../admission/pauses";
import type { QueueDto, QueueSettingsDto, QueueTenantDto } from "../admission/queues";
import type { AuditEntryDto, DeadLetterGroupDto, StuckJobDto, WorkerDto, WorkerPoolDto } from "../ops/console";
import type { Overview, OverviewRow, SeriesPoint } from "../ops/stats";
import type { Health, HealthRowDto, HealthSignal, HealthState, SignalDto } from "../ops/health";
import type { JobActionPlan, getOpsJob } from "../ops/jobs";
import type { ExportLinkDto } from "../exports/links";

export type {
  JobDto,
  TokenDto,
  PauseDto,
  QueueDto,
  QueueTenantDto,
  DeadLetterGroupDto,
  StuckJobDto,
  WorkerDto,
  AuditEntryDto,
  Overview,
  OverviewRow,
  SeriesPoint,
  ExportLinkDto,
  Health,
  HealthRowDto,
  HealthSignal,
  HealthState,
  SignalDto,
};

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly fields: { path: string; message: string }[] = [],
    /** The API's error code (`quota_exceeded`, `rate_limited`…). */
    readonly code: string | null = null,
    /** Data beside the message: a quota's name, limit and use; a wait in seconds. */
    readonly details: Record<string, unknown> | null = null,
  ) {
    super(message);
  }
}

/** A JSON request to the API; a non-2xx answer throws an ApiError with its message, fields, code and details. */
export async function request<T>(url: string, init?: RequestInit): Promise<T> {
  const res = await fetch(url, { ...init, headers: { "Content-Type": "application/json", ...init?.headers } });
  if (!res.ok) {
    const body = (await res.json().catch(() => null)) as {
      error?: { code?: string; message?: string; fields?: ApiError["fields"]; details?: Record<string, unknown> };
    } | null;
    throw new ApiError(
      res.status,
      body?.error?.message ?? `Request failed (${res.status})`,
      body?.error?.fields,
      body?.error?.code ?? null,
      body?.error?.details ?? null,
    );
  }
  return (res.status === 204 ? undefined : await res.json()) as T;
}

/** GET /api/v1/jobs's filters (docs/API.md): `type` may list several, comma-separated; `from`/`to` are instants. */
export type JobFilters = {
  type?: string;
  status?: string;
  source?: "manual" | "schedule";
  /** A schedule's id: its runs only. */
  schedule?: string;
  /** `field:value` of the input (`dataset:customers`). */
  input?: string;
  from?: string;
  to?: string;
  roots?: "1";
  mine?: "1";
  limit?: number;
};

export const jobKeys = {
  all: ["jobs"] as const,
  lists: () => [...jobKeys.all, "list"] as const,
  list: (filters: JobFilters) => [...jobKeys.lists(), filters] as const,
  /** A list paged with "Load more" (an infinite query: its data is `{ pages }`). */
  pages: (filters: JobFilters) => [...jobKeys.lists(), "pages", filters] as const,
  details: () => [...jobKeys.all, "detail"] as const,
  detail: (id: string) => [...jobKeys.details(), id] as const,
};

export const tokenKeys = { all: ["tokens"] as const };

/** One page of the tenant's jobs, newest first; `cursor`: a previous page's `nextCursor`. */
export function fetchJobs(
  filters: JobFilters,
  cursor?: string,
): Promise<{ jobs: JobDto[]; nextCursor: string | null }> {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(filters)) if (v !== undefined) q.set(k, String(v));
  if (cursor) q.set("cursor", cursor);
  return request(`/api/v1/jobs?${q}`);
}

export function fetchJob(id: string): Promise<JobDto> {
  return request(`/api/v1/jobs/${encodeURIComponent(id)}`);
}

export type ExportForm = {
  dataset: string;
  format: string;
  compression: string;
  filter?: { from?: string; to?: string };
  csvSafe?: boolean;
  /** Start later (ISO, up to a year ahead): the job waits as `scheduled` until then and can be cancelled. */
  runAt?: string;
};

export function createExport(body: ExportForm, idempotencyKey: string): Promise<JobDto> {
  return request("/api/v1/exports", {
    method: "POST",
    body: JSON.stringify(body),
    headers: { "Idempotency-Key": idempotencyKey },
  });
}

export type JobHistory = Awaited<ReturnType<typeof getJobHistory>>;

export function fetchExportLinks(jobId: string): Promise<{ links: ExportLinkDto[] }> {
  return request(`/api/v1/exports/${encodeURIComponent(jobId)}/links`);
}

export function createExportLink(jobId: string, ttlSeconds?: number): Promise<ExportLinkDto> {
  return request(`/api/v1/exports/${encodeURIComponent(jobId)}/links`, {
    method: "POST",
    body: JSON.stringify(ttlSeconds ? { ttlSeconds } : {}),
  });
}

export function revokeExportLink(jobId: string, linkId: string): Promise<void> {
  return request(`/api/v1/exports/${encodeURIComponent(jobId)}/links/${encodeURIComponent(linkId)}`, {
    method: "DELETE",
  });
}

export function deleteExport(jobId: string): Promise<void> {
  return request(`/api/v1/exports/${encodeURIComponent(jobId)}`, { method: "DELETE" });
}

/** A job's child jobs (a split export's parts). */
export function fetchJobParts(id: string): Promise<{ parts: JobDto[] }> {
  return request(`/api/v1/jobs/${encodeURIComponent(id)}/parts`);
}

export const historyKeys = { detail: (id: string) => ["jobs", "history", id] as const };

export function fetchJobHistory(id: string): Promise<JobHistory> {
  return request(`/api/v1/jobs/${encodeURIComponent(id)}/history`);
}

export function cancelJob(id: string, reason?: string): Promise<JobDto> {
  return request(`/api/v1/jobs/${encodeURIComponent(id)}/cancel`, {
    method: "POST",
    ...(reason ? { body: JSON.stringify({ reason }) } : {}),
  });
}

export function replayJob(id: string): Promise<JobDto> {
  return request(`/api/v1/jobs/${encodeURIComponent(id)}/replay`, { method: "POST" });
}

export function fetchTokens(): Promise<{ tokens: TokenDto[] }> {
  return request("/api/v1/tokens");
}

export type TokenForm = { name: string; scopes?: ("read" | "write")[]; expiresInDays?: number };

export function createToken(body: TokenForm): Promise<{ token: string; record: TokenDto }> {
  return request("/api/v1/tokens", { method: "POST", body: JSON.stringify(body) });
}

export function revokeToken(id: string): Promise<void> {
  return request(`/api/v1/tokens/${encodeURIComponent(id)}`, { method: "DELETE" });
}

// Admission: queues and pauses (operators and platform admins).

export const queueKeys = { all: ["queues"] as const };

export function fetchQueues(): Promise<{ queues: QueueDto[] }> {
  return request("/api/v1/ops/queues");
}

export type PauseForm = {
  queue?: string;
  type?: string;
  tenant?: string;
  cancelRunning?: boolean;
  reason?: string;
};

export function createPause(body: PauseForm): Promise<PauseDto & { heldBack: number; cancelled: number }> {
  return request("/api/v1/ops/pauses", { method: "POST", body: JSON.stringify(body) });
}

/** The active pauses the caller may see. */
export function fetchPauses(): Promise<{ pauses: PauseDto[] }> {
  return request("/api/v1/ops/pauses");
}

export function resumePause(id: string): Promise<PauseDto> {
  return request(`/api/v1/ops/pauses/${encodeURIComponent(id)}`, { method: "DELETE" });
}

export function setTenantLimit(
  queue: string,
  tenantId: string,
  body: { maxRunning: number | null; weight: number },
): Promise<unknown> {
  return request(`/api/v1/ops/queues/${encodeURIComponent(queue)}/tenants/${encodeURIComponent(tenantId)}`, {
    method: "PUT",
    body: JSON.stringify(body),
  });
}

/** A queue's default per-tenant cap and window, for the whole fleet (platform admins). */
export function updateQueueSettings(
  queue: string,
  body: { tenantCap?: number; window?: number },
): Promise<QueueSettingsDto> {
  return request(`/api/v1/ops/queues/${encodeURIComponent(queue)}`, {
    method: "PATCH",
    body: JSON.stringify(body),
  });
}

// The console's dead-letter queue, grouped (operators and platform admins).
/** The dead-letter page's filters (its URL's), as GET /api/v1/ops/dead-letters takes them. */
export type DeadLetterGroupsQuery = {
  queue?: string;
  type?: string;
  errorClass?: string;
  tenant?: string;
  from?: string;
};

export const deadLetterKeys = {
  groups: ["dead-letters", "groups"] as const,
  filtered: (q: DeadLetterGroupsQuery) => [...deadLetterKeys.groups, q] as const,
};

export function fetchDeadLetterGroups(q: DeadLetterGroupsQuery = {}): Promise<{ groups: DeadLetterGroupDto[] }> {
  const params = new URLSearchParams(Object.entries(q).filter((e): e is [string, string] => Boolean(e[1])));
  return request(`/api/v1/ops/dead-letters${params.size ? `?${params}` : ""}`);
}

export type DeadLetterGroupFilter = {
  type: string;
  errorClass?: string;
  fingerprint?: string;
  queue?: string;
  tenant?: string;
  from?: string;
};

export function replayDeadLetterGroup(
  filter: DeadLetterGroupFilter,
): Promise<{ matched: number; replayed: number; jobIds: string[] }> {
  return request("/api/v1/dead-letters/replay", { method: "POST", body: JSON.stringify({ filter }) });
}

export function discardDeadLetterGroup(filter: DeadLetterGroupFilter): Promise<{ matched: number; discarded: number }> {
  return request("/api/v1/dead-letters/discard", { method: "POST", body: JSON.stringify({ filter }) });
}

// The console's read-only views.

export const consoleKeys = {
  stuck: ["console", "stuck"] as const,
  workers: ["console", "workers"] as const,
  audit: (filters: Record<string, string>) => ["console", "audit", filters] as const,
  overview: (filters: Record<string, string>) => ["console", "overview", filters] as const,
  health: (tenant: string) => ["console", "health", tenant] as const,
};

/** The health signals (GET /api/v1/ops/health); `tenant` narrows a platform admin's tenant rows. */
export function fetchHealth(tenant: string): Promise<Health> {
  return request(`/api/v1/ops/health${tenant ? `?${new URLSearchParams({ tenant })}` : ""}`);
}

export function fetchOverview(filters: Record<string, string>): Promise<Overview> {
  const q = new URLSearchParams(Object.entries(filters).filter(([, v]) => v !== ""));
  return request(`/api/v1/ops/overview?${q}`);
}

export function fetchStuckJobs(): Promise<{ jobs: StuckJobDto[] }> {
  return request("/api/v1/ops/stuck");
}

export function fetchWorkers(): Promise<{ workers: WorkerDto[]; pools: WorkerPoolDto[] }> {
  return request("/api/v1/ops/workers");
}

export function fetchAudit(
  filters: Record<string, string>,
): Promise<{ entries: AuditEntryDto[]; nextCursor: string | null }> {
  const q = new URLSearchParams(Object.entries(filters).filter(([, v]) => v !== ""));
  return request(`/api/v1/ops/audit?${q}`);
}

// The console's jobs explorer.
/**
 * The explorer's filters as the API takes them (`from`/`to`: ISO instants; `children`, `dead`: "1").
 * The same keys, in the page's words, make its URL (components/jobs-explorer.tsx).
 */
export const opsJobFilterKeys = [
  "status",
  "type",
  "queue",
  "tenant",
  "q",
  "from",
  "to",
  "errorClass",
  "fingerprint",
  "children",
  "dead",
] as const;
export type OpsJobFilters = Partial<Record<(typeof opsJobFilterKeys)[number], string>>;

export function fetchOpsJobs(
  filters: OpsJobFilters,
  cursor?: string,
): Promise<{ jobs: JobDto[]; nextCursor: string | null; tenants: Record<string, string> }> {
  const q = new URLSearchParams(Object.entries(filters).filter((e): e is [string, string] => Boolean(e[1])));
  if (cursor) q.set("cursor", cursor);
  return request(`/api/v1/ops/jobs?${q}`);
}

export type JobAction = "cancel" | "replay" | "discard" | "retry_now";

type JobActionBody = { action: JobAction; ids?: string[]; filter?: OpsJobFilters };

export function runJobAction(body: JobActionBody): Promise<{ action: string; matched: number; affected: number }> {
  return request("/api/v1/ops/jobs/actions", { method: "POST", body: JSON.stringify(body) });
}

export type OpsJobDetail = Awaited<ReturnType<typeof getOpsJob>>;

/** One job as operators see it: redacted input, attempts, timeline, parts and audit entries. */
export function fetchOpsJob(id: string): Promise<OpsJobDetail> {
  return request(`/api/v1/ops/jobs/${encodeURIComponent(id)}`);
}

/** What an action would do: how many jobs match, and the ids it applies to. */
export function planJobAction(body: JobActionBody): Promise<JobActionPlan> {
  return request("/api/v1/ops/jobs/actions", { method: "POST", body: JSON.stringify({ ...body, dryRun: true }) });
}
