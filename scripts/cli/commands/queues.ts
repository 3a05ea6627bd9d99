/**
 * `queues list|set-cap`: per queue, its caps and what waits and runs (GET
 * /api/v1/ops/queues), and a tenant's own cap and weight in a queue (PUT/DELETE
 * /api/v1/ops/queues/{queue}/tenants/{tenant}), through the same lib/ functions.
 * (A queue's default cap and window are not set here.)
 */
import type { Command } from "commander";
import { clearTenantLimit, getQueues, setTenantLimit } from "@/lib/admission/queues";
import { QUEUES } from "@/lib/jobs/task";
import { actingAs, actingOptions, handler, jsonOption, UsageError, wholeNumber, type ActingOpts } from "../run";
import { table } from "../table";

/** `<cap>`: a whole number, or `default` (the queue's default cap). */
function capArgument(raw: string): number | null {
  if (raw === "default") return null;
  return wholeNumber(0, 100_000)(raw);
}

type SetCapOpts = ActingOpts & { json?: boolean; weight?: number };

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
        .description("a tenant's own cap in a queue: jobs of it admitted or running at once (platform admins)")
        .argument("<queue>", `the queue: ${QUEUES.join(", ")}`)
        .argument("<cap>", "a whole number, or `default` for the queue's default cap", capArgument)
        .option("--weight <n>", "its turns per round of the round-robin (1-100, default 1)", wholeNumber(1, 100)),
    ),
  )
    .addHelpText(
      "after",
      "\n--tenant (required) names the tenant whose cap this is. `<cap> default` without --weight removes the override.",
    )
    .action(
      handler<SetCapOpts>(
        async ({ opts, args, print }) => {
          const { principal, tenant } = await actingAs(opts);
          if (!tenant) throw new UsageError("--tenant is required: the tenant whose cap this is");
          const [queue, cap] = args as [string, number | null];
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
