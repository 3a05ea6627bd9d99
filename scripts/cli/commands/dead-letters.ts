/**
 * `dead-letters list|replay|discard`: the dead-letter queue (failed jobs not yet
 * replayed or discarded), as GET /api/v1/dead-letters and POST
 * /api/v1/dead-letters/replay|discard do it, through the same lib/ functions.
 * Operators (their tenant), platform admins (every tenant's).
 */
import type { Command } from "commander";
import { discardDeadLetters, listDeadLetters, replayDeadLetters, type DeadLetterFilter } from "@/lib/jobs/dead-letters";
import { listOpsJobs } from "@/lib/ops/jobs";
import {
  actingAs,
  actingOptions,
  cut,
  handler,
  jsonOption,
  UsageError,
  when,
  wholeNumber,
  type ActingOpts,
  type Acting,
} from "../run";
import { table } from "../table";

type FilterOpts = {
  type?: string;
  errorClass?: string;
  fingerprint?: string;
  q?: string;
  from?: string;
  to?: string;
};

/** The filter options every dead-letters command takes. */
function filterOptions(cmd: Command): Command {
  return cmd
    .option("--type <type>", "only jobs of this type")
    .option("--error-class <class>", "only this class of last error (retryable, permanent, crashed, timeout…)")
    .option("--fingerprint <text>", "only one group of the console's dead-letter page (the masked error message)")
    .option("--q <text>", "only errors whose message contains this")
    .option("--from <time>", "failed at or after this ISO time")
    .option("--to <time>", "failed before this ISO time");
}

const filterOf = (o: FilterOpts): DeadLetterFilter =>
  Object.fromEntries(
    Object.entries({
      type: o.type,
      errorClass: o.errorClass,
      fingerprint: o.fingerprint,
      q: o.q,
      from: o.from,
      to: o.to,
    }).filter(([, v]) => v !== undefined),
  );

/**
 * The body of a replay or discard: the ids, or the filter. A platform admin's
 * filter spans every tenant (the API's takes no tenant), so `--tenant` with a
 * filter is refused rather than quietly acting on all of them.
 */
function bodyOf(ids: string[], o: FilterOpts & { all?: boolean }, acting: Acting, verb: string) {
  const filter = filterOf(o);
  const hasFilter = Object.keys(filter).length > 0;
  if (ids.length && (hasFilter || o.all)) throw new UsageError(`give ids or a filter (or --all), not both`);
  if (ids.length) return { ids };
  if (!hasFilter && !o.all) {
    throw new UsageError(`<ids>: give the ids of the jobs to ${verb}, a filter (--type…), or --all`);
  }
  if (acting.principal.isPlatformAdmin && acting.tenant) {
    throw new UsageError(
      `--tenant: a platform admin's filter acts on every tenant's dead letters; give their ids instead`,
    );
  }
  return { filter };
}

type ListOpts = ActingOpts & FilterOpts & { json?: boolean; limit: number; cursor?: string };
type ActOpts = ActingOpts & FilterOpts & { json?: boolean; all?: boolean };

export function deadLettersCommands(program: Command): void {
  const dl = program
    .command("dead-letters")
    .description("failed jobs not yet replayed or discarded (operators): list, replay, discard");

  jsonOption(
    actingOptions(
      filterOptions(
        dl
          .command("list")
          .description("the dead-letter queue, newest failure first")
          .option("--limit <n>", "at most n jobs (1-100)", wholeNumber(1, 100), 20)
          .option("--cursor <cursor>", "the page after the one that printed this cursor"),
      ),
    ),
  ).action(
    handler<ListOpts>(async ({ opts, print, note }) => {
      const acting = await actingAs(opts);
      const { principal, tenant } = acting;
      const filter = filterOf(opts);
      // A platform admin's view of one tenant: the console explorer's query, which filters by tenant.
      const page =
        principal.isPlatformAdmin && tenant
          ? await listOpsJobs(principal, {
              ...filter,
              tenant,
              dead: true,
              children: true,
              limit: opts.limit,
              cursor: opts.cursor,
            })
          : await listDeadLetters(principal, { ...filter, limit: opts.limit, cursor: opts.cursor });
      const tenants = "tenants" in page ? (page.tenants as Record<string, string>) : undefined;
      print(page, () =>
        page.jobs.length
          ? table(
              ["ID", ...(principal.isPlatformAdmin ? ["TENANT"] : []), "TYPE", "ERROR CLASS", "FAILED", "ERROR"],
              page.jobs.map((j) => [
                j.id,
                ...(principal.isPlatformAdmin ? [tenants?.[j.tenantId] ?? j.tenantId] : []),
                j.type,
                j.error?.class ?? "-",
                when(j.finishedAt),
                cut(j.error?.message, 60),
              ]),
            )
          : "",
      );
      if (!page.jobs.length) note("No dead letters.");
      if (page.nextCursor) note(`More: --cursor ${page.nextCursor}`);
    }),
  );

  jsonOption(
    actingOptions(
      filterOptions(
        dl
          .command("replay")
          .description("replay dead jobs as new jobs, by id or by filter (at most 10,000 a call)")
          .argument("[ids...]", "the dead jobs' ids")
          .option("--all", "every dead job the acting user may see (no ids, no filter)"),
      ),
    ),
  ).action(
    handler<ActOpts>(
      async ({ opts, args, print, note }) => {
        const acting = await actingAs(opts);
        const out = await replayDeadLetters(acting.principal, bodyOf(args[0] as string[], opts, acting, "replay"));
        print(out, () => out.jobIds.join("\n"));
        note(`${out.matched} matched, ${out.replayed} replayed (the new jobs' ids above)`);
      },
      { ids: "<ids>" },
    ),
  );

  jsonOption(
    actingOptions(
      filterOptions(
        dl
          .command("discard")
          .description("remove dead jobs from the queue, by id or by filter (their history is kept)")
          .argument("[ids...]", "the dead jobs' ids")
          .option("--all", "every dead job the acting user may see (no ids, no filter)"),
      ),
    ),
  ).action(
    handler<ActOpts>(
      async ({ opts, args, print }) => {
        const acting = await actingAs(opts);
        const out = await discardDeadLetters(acting.principal, bodyOf(args[0] as string[], opts, acting, "discard"));
        print(out, () => `${out.matched} matched, ${out.discarded} discarded`);
      },
      { ids: "<ids>" },
    ),
  );
}
