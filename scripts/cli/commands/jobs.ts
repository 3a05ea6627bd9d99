/**
 * `jobs list|get|cancel|replay`: the API's jobs routes (GET /api/v1/jobs, GET
 * /api/v1/jobs/{id}, POST …/cancel, POST …/replay) through the same lib/
 * functions. A platform admin's `jobs list --tenant` goes through the console's
 * explorer (GET /api/v1/ops/jobs), the lib/ function that filters by tenant.
 */
import type { Command } from "commander";
import { cancelJob, replayJob } from "@/lib/jobs/actions";
import { progressMessage } from "@/lib/client/progress";
import { formatCount, formatDuration, progressText, retryLines } from "@/lib/client/format";
import { childNoun } from "@/lib/client/kinds/lookup";
import { timeLeftMs } from "@/lib/jobs/progress-rate";
import type { JobDto } from "@/lib/jobs/dto";
import { getJob, jobStatuses, listJobs } from "@/lib/jobs/queries";
import { listOpsJobs } from "@/lib/ops/jobs";
import { actingAs, actingOptions, cut, handler, jsonOption, when, wholeNumber, type ActingOpts } from "../run";
import { table } from "../table";
import { stateLabel } from "@/lib/jobs/states";

/** Jobs as a table; with a TENANT column when they may come from several. */
export function jobsTable(jobs: JobDto[], tenants?: Record<string, string>): string {
  return table(
    ["ID", ...(tenants ? ["TENANT"] : []), "TYPE", "STATUS", "QUEUE", "CREATED", "FINISHED", "BY", "ERROR"],
    jobs.map((j) => [
      j.id,
      ...(tenants ? [tenants[j.tenantId] ?? j.tenantId] : []),
      j.type,
      stateLabel(j.status),
      j.queue,
      when(j.createdAt),
      when(j.finishedAt),
      j.requestedBy ?? "-",
      cut(j.error?.message, 50),
    ]),
  );
}

function jobText(j: JobDto): string {
  const progress = j.progress.total
    ? `${j.progress.done}/${j.progress.total}${j.progress.unit ? ` ${j.progress.unit}` : ""}`
    : `${j.progress.done}${j.progress.unit ? ` ${j.progress.unit}` : ""}`;
  const lines: [string, string | null | undefined][] = [
    ["id", j.id],
    ["type", j.type],
    ["status", stateLabel(j.status)],
    ["queue", j.queue],
    ["attempts", `${j.attempts} of ${j.maxAttempts}`],
    ["progress", `${progress}${j.progress.stage ? ` (${j.progress.stage})` : ""}`],
    // Worded from the fields by the one formatter the pages and the API use.
    ["doing", progressText(j, childNoun(j.type)) ?? progressMessage(j)],
    // The API's rate (the last 30 s, lib/jobs/progress-rate.ts), as the pages show it.
    ["rate", j.progress.rate === null ? null : `${formatCount(j.progress.rate)} ${j.progress.unit ?? "items"}/s`],
    ["time left", timeLeftOf(j)],
    ["retrying", retryLines(j, childNoun(j.type)).join("; ")],
    ["requested by", j.requestedBy],
    ["created", when(j.createdAt)],
    ["started", j.startedAt && when(j.startedAt)],
    ["finished", j.finishedAt && when(j.finishedAt)],
    ["waiting", j.admission],
    ["paused", j.pause ? `by ${j.pause.by ?? "?"}${j.pause.reason ? `: ${j.pause.reason}` : ""}` : null],
    ["error", j.error ? `${j.error.class ?? "error"}: ${oneLineOf(j.error.message)}` : null],
    ["cancel", j.cancelRequested ? `asked by ${j.cancelRequested.by ?? "?"} at ${when(j.cancelRequested.at)}` : null],
    ["parent", j.parentId],
    ["replay of", j.replayOfId],
    ["schedule", j.scheduleId],
    ["files", j.result?.files.length ? j.result.files.map((f) => `${f.name} (${f.size} B)`).join(", ") : null],
  ];
  return lines
    .filter(([, v]) => v !== null && v !== undefined && v !== "")
    .map(([k, v]) => `${`${k}:`.padEnd(14)}${v}`)
    .join("\n");
}

function timeLeftOf(j: JobDto): string | null {
  const ms = timeLeftMs(j.progress.done, j.progress.total, j.progress.rate);
  return ms === null ? null : formatDuration(ms);
}

const oneLineOf = (s: string) => s.replace(/\s*\n\s*/g, " ");

type ListOpts = ActingOpts & { json?: boolean; status?: string; type?: string; limit: number; cursor?: string };

export function jobsCommands(program: Command): void {
  const jobs = program
    .command("jobs")
    .description("your tenant's jobs (a platform admin: every tenant's): list, show, cancel, replay");

  jsonOption(
    actingOptions(
      jobs
        .command("list")
        .description("jobs, newest first (a page at a time: --cursor continues)")
        .option("--status <status>", `only jobs in this status: ${jobStatuses.join(", ")}`)
        .option("--type <type>", "only jobs of this type (export, import, probe…)")
        .option("--limit <n>", "at most n jobs (1-100)", wholeNumber(1, 100), 20)
        .option("--cursor <cursor>", "the page after the one that printed this cursor"),
    ),
  ).action(
    handler<ListOpts>(async ({ opts, print, note }) => {
      const { principal, tenant } = await actingAs(opts);
      const query = { status: opts.status, type: opts.type, limit: opts.limit, cursor: opts.cursor };
      // A platform admin names a tenant: the explorer's query filters by it (and by nothing the API's list lacks).
      const page =
        principal.isPlatformAdmin && tenant
          ? await listOpsJobs(principal, { ...query, tenant, children: true })
          : await listJobs(principal, query);
      const tenants = "tenants" in page ? (page.tenants as Record<string, string>) : undefined;
      print(page, () =>
        page.jobs.length ? jobsTable(page.jobs, principal.isPlatformAdmin ? (tenants ?? {}) : undefined) : "",
      );
      if (!page.jobs.length) note("No jobs.");
      if (page.nextCursor) note(`More: --cursor ${page.nextCursor}`);
    }),
  );

  jsonOption(
    actingOptions(
      jobs.command("get").description("one job: status, progress, error, files").argument("<id>", "the job's id"),
    ),
  ).action(
    handler<ActingOpts & { json?: boolean }>(async ({ opts, args, print }) => {
      const { principal } = await actingAs(opts);
      const job = await getJob(principal, args[0] as string);
      print(job, () => jobText(job));
    }),
  );

  jsonOption(
    actingOptions(
      jobs
        .command("cancel")
        .description("cancel a waiting job at once, or ask a running one to stop (members: their tenant's jobs)")
        .argument("<id>", "the job's id")
        .option("--reason <text>", "why (kept with the job and in the audit log)"),
    ),
  ).action(
    handler<ActingOpts & { json?: boolean; reason?: string }>(async ({ opts, args, print }) => {
      const { principal } = await actingAs(opts);
      const job = await cancelJob(
        principal,
        args[0] as string,
        opts.reason === undefined ? {} : { reason: opts.reason },
      );
      print(job, () =>
        job.status === "cancelled"
          ? `${job.id} cancelled`
          : `${job.id} asked to stop (it is ${stateLabel(job.status)})`,
      );
    }),
  );

  jsonOption(
    actingOptions(
      jobs
        .command("replay")
        .description("run a failed or cancelled job again as a new job (operators)")
        .argument("<id>", "the job's id"),
    ),
  ).action(
    handler<ActingOpts & { json?: boolean }>(async ({ opts, args, print }) => {
      const { principal } = await actingAs(opts);
      const replay = await replayJob(principal, args[0] as string);
      print(
        replay,
        () => `${replay.id}  replay of ${String(args[0])} (${stateLabel(replay.status)}, queue ${replay.queue})`,
      );
    }),
  );
}
