/**
 * `tenants list|create` (`tenant` too): as GET/POST /api/v1/ops/tenants do,
 * through the same lib/ functions. Platform admins.
 */
import type { Command } from "commander";
import { createTenant, listTenants } from "@/lib/tenants/settings";
import { actingAs, actingOptions, handler, jsonOption, type ActingOpts } from "../run";
import { table } from "../table";

const count = (n: number | null) => (n === null ? "-" : n.toLocaleString("en"));

export function tenantsCommands(program: Command): void {
  const tenants = program.command("tenants").alias("tenant").description("tenants (platform admins): list, create");

  jsonOption(
    actingOptions(tenants.command("list").description("every tenant with its retention and quotas"), { tenant: false }),
  ).action(
    handler<ActingOpts & { json?: boolean }>(async ({ opts, print }) => {
      const { principal } = await actingAs(opts);
      const rows = await listTenants(principal);
      print({ tenants: rows }, () =>
        table(
          ["SLUG", "NAME", "ID", "EXPORT DAYS", "JOBS/USER", "JOBS/TENANT", "EXPORT BYTES"],
          rows.map((t) => [
            t.slug,
            t.name,
            t.id,
            `${t.effectiveRetentionDays}${t.exportRetentionDays === null ? " (default)" : ""}`,
            count(t.effectiveQuotas.jobsPerUser),
            count(t.effectiveQuotas.jobsPerTenant),
            count(t.effectiveQuotas.exportBytes),
          ]),
        ),
      );
    }),
  );

  jsonOption(
    actingOptions(
      tenants
        .command("create")
        .description("create a tenant; prints its id")
        .requiredOption(
          "--slug <slug>",
          "its short name in URLs and commands: 3-40 lowercase letters, digits, dashes (required)",
        )
        .requiredOption("--name <name>", "its name as people read it (required)"),
      { tenant: false },
    ),
  ).action(
    handler<ActingOpts & { json?: boolean; slug: string; name: string }>(async ({ opts, print }) => {
      const { principal } = await actingAs(opts);
      const tenant = await createTenant(principal, { slug: opts.slug, name: opts.name });
      print(tenant, () => tenant.id);
    }),
  );
}
