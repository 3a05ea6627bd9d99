/**
 * `pauses list|add|remove`: pause and resume a scope (a queue, a job type, a
 * tenant, or a combination), as GET/POST /api/v1/ops/pauses and DELETE
 * /api/v1/ops/pauses/{id} do, through the same lib/ functions. Operators (their
 * tenant), platform admins (any scope, platform-wide ones too).
 */
import type { Command } from "commander";
import { createPause, listPauses, resumePause, type PauseDto } from "@/lib/admission/pauses";
import { queueNames } from "@/lib/jobs/registry";
import { actingAs, actingOptions, cut, handler, jsonOption, when, type ActingOpts } from "../run";
import { table } from "../table";

const scopeOf = (p: PauseDto): string =>
  [p.queue ? `queue ${p.queue}` : null, p.type ? `type ${p.type}` : null, p.tenant ? `tenant ${p.tenant.slug}` : null]
    .filter(Boolean)
    .join(", ") || "everything";

type AddOpts = ActingOpts & { json?: boolean; queue?: string; type?: string; reason?: string; cancelRunning?: boolean };

export function pausesCommands(program: Command): void {
  const pauses = program
    .command("pauses")
    .description("pauses of queues, job types and tenants (operators): list, add, remove (resume)");

  jsonOption(
    actingOptions(
      pauses
        .command("list")
        .description("active pauses the acting user may see (operators: their tenant's and platform-wide ones)")
        .option("--all", "resumed pauses too (the newest 100)"),
    ),
  ).action(
    handler<ActingOpts & { json?: boolean; all?: boolean }>(async ({ opts, print, note }) => {
      const { principal } = await actingAs(opts);
      const rows = await listPauses(principal, { state: opts.all ? "all" : "active" });
      print({ pauses: rows }, () =>
        rows.length
          ? table(
              ["ID", "SCOPE", "REASON", "BY", "SINCE", ...(opts.all ? ["RESUMED"] : [])],
              rows.map((p) => [
                p.id,
                scopeOf(p),
                cut(p.reason, 40) || "-",
                p.createdBy ?? "-",
                when(p.createdAt),
                ...(opts.all ? [p.resumedAt ? `${when(p.resumedAt)} by ${p.resumedBy ?? "?"}` : "-"] : []),
              ]),
            )
          : "",
      );
      if (!rows.length) note("No pauses.");
    }),
  );

  jsonOption(
    actingOptions(
      pauses
        .command("add")
        .description(
          "pause a scope: no job of it starts until it is resumed (give at least one of --queue, --type, --tenant)",
        )
        .option("--queue <queue>", `the queue: ${queueNames().join(", ")}`)
        .option("--type <type>", "the job type")
        .option("--reason <text>", "why (shown to the tenant's people and kept in the audit log)")
        .option("--cancel-running", "also cancel the scope's running jobs (otherwise they finish)"),
    ),
  )
    .addHelpText(
      "after",
      "\n--tenant names the tenant to pause (operators: their own; left out, a platform admin pauses every tenant).",
    )
    .action(
      handler<AddOpts>(async ({ opts, print, note }) => {
        const { principal, tenant } = await actingAs(opts);
        const pause = await createPause(principal, {
          queue: opts.queue,
          type: opts.type,
          // An operator's pause is always their tenant's; naming it says so (lib/ resolves it either way).
          tenant: tenant ?? undefined,
          reason: opts.reason,
          cancelRunning: Boolean(opts.cancelRunning),
        });
        print(pause, () => pause.id);
        note(`Paused ${scopeOf(pause)}: ${pause.heldBack} admitted job(s) held back, ${pause.cancelled} cancelled.`);
      }),
    );

  jsonOption(
    actingOptions(
      pauses
        .command("remove")
        .alias("resume")
        .description("resume: the pause ends and the scope's waiting jobs start in their order")
        .argument("<id>", "the pause's id (pauses list)"),
    ),
  ).action(
    handler<ActingOpts & { json?: boolean }>(async ({ opts, args, print }) => {
      const { principal } = await actingAs(opts);
      const pause = await resumePause(principal, args[0] as string);
      print(pause, () => `${pause.id} resumed (${scopeOf(pause)})`);
    }),
  );
}
