/**
 * `queues list|set-cap`: per queue, its caps and what waits and runs (GET
 * /api/v1/ops/queues); a tenant's own cap and weight in a queue (PUT/DELETE
 * /api/v1/ops/queues/{queue}/tenants/{tenant}), or, without --tenant, the queue's
 * default cap and its window for the whole fleet (PATCH /api/v1/ops/queues/{queue}),
 * through the same lib/ functions.
 */
import type { Command } from "commander";
import { clearTenantLimit, getQueues, setTenantLimit, updateQueueSettings } from "@/lib/admission/queues";
import { queueNames } from "@/lib/jobs/registry";
import { actingAs, actingOptions, handler, jsonOption, UsageError, wholeNumber, type ActingOpts } from "../run";
import { table } from "../table";

/** `<cap>`: a whole number, or `default` (the queue's default cap). */
function capArgument(raw: string): number | null {
  if (raw === "default") return null;
  return wholeNumber(0, 100_000)(raw);
}

type SetCapOpts = ActingOpts & { json?: boolean; weight?: number; window?: number };

export function queuesCommands(program: Command): void {
  const queues = program
    .command("queues")
    .description("queues, their caps and what waits and runs in them (operators): list, set-cap");

  jsonOption(
    actingOptions(
      queues
        .command("list")
        .description("per queue: caps, waiting, admitted and running jobs, pauses; then per tenant")
        .option("--tenants", "also list each tenant's counts, cap and weight per queue"),
    ),
  ).action(
    handler<ActingOpts & { json?: boolean; tenants?: boolean }>(async ({ opts, print }) => {
      const { principal } = await actingAs(opts);
      const out = await getQueues(principal);
      print(out, () => {
        const main = table(
          ["QUEUE", "TENANT CAP", "WINDOW", "WAITING", "SCHEDULED", "ADMITTED", "RUNNING", "PAUSED"],
          out.queues.map((q) => [
            q.name,
            String(q.tenantCap),
            String(q.window),
            String(q.waiting),
            String(q.scheduled),
            String(q.admitted),
            String(q.running),
            q.paused ? "yes" : q.pauses.length ? `${q.pauses.length} pause(s)` : "no",
          ]),
        );
        if (!opts.tenants) return main;
        const rows = out.queues.flatMap((q) =>
          q.tenants.map((t) => [
            q.name,
            t.tenant.slug,
            t.capOverride === null ? `${t.cap} (default)` : String(t.cap),
            String(t.weight),
            String(t.waiting),
            String(t.admitted),
            String(t.running),
            t.paused ? "yes" : "no",
          ]),
        );
        return `${main}\n\n${table(["QUEUE", "TENANT", "CAP", "WEIGHT", "WAITING", "ADMITTED", "RUNNING", "PAUSED"], rows)}`;
      });
    }),
  );

  jsonOption(
    actingOptions(
      queues
        .command("set-cap")
        .description(
          "a tenant's own cap in a queue (with --tenant), or the queue's default cap for every tenant (platform admins)",
        )
        .argument("<queue>", `the queue: ${queueNames().join(", ")}`)
        .argument("<cap>", "a whole number, or `default` for the queue's default cap (with --tenant)", capArgument)
        .option(
          "--weight <n>",
          "with --tenant: its turns per round of the round-robin (1-100, default 1)",
          wholeNumber(1, 100),
        )
        .option(
          "--window <n>",
          "without --tenant: also the queue's window, jobs of all tenants admitted or running at once (1-100000)",
          wholeNumber(1, 100_000),
        ),
    ),
  )
    .addHelpText(
      "after",
      "\nWith --tenant: that tenant's own cap; `<cap> default` without --weight removes the override.\n" +
        "Without --tenant: the queue's default cap (and --window) for the whole fleet, kept in the database.",
    )
    .action(
      handler<SetCapOpts>(
        async ({ opts, args, print }) => {
          const { principal, tenant } = await actingAs(opts);
          const [queue, cap] = args as [string, number | null];
          if (!tenant) {
            if (cap === null) throw new UsageError("<cap> `default` needs --tenant: the queue's own cap is a number");
            if (opts.weight !== undefined) throw new UsageError("--weight needs --tenant: it is a tenant's weight");
            const body = opts.window === undefined ? { tenantCap: cap } : { tenantCap: cap, window: opts.window };
            const q = await updateQueueSettings(principal, queue, body);
            print(q, () => `${q.name}: default tenant cap ${q.tenantCap}, window ${q.window}`);
            return;
          }
          if (opts.window !== undefined) throw new UsageError("--window is the queue's: leave out --tenant to set it");
          const out =
            cap === null && opts.weight === undefined
              ? await clearTenantLimit(principal, queue, tenant)
              : await setTenantLimit(principal, queue, tenant, { maxRunning: cap, weight: opts.weight ?? 1 });
          print(out, () =>
            out.maxRunning === null && out.weight === 1
              ? `${tenant} in ${out.queue}: the queue's defaults`
              : `${tenant} in ${out.queue}: cap ${out.maxRunning ?? "default"}, weight ${out.weight}`,
          );
        },
        { maxRunning: "<cap>" },
      ),
    );
}
