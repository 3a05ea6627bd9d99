/**
 * `webhooks list|test|enable|disable|recover`: webhook endpoints as
 * /api/v1/webhooks/endpoints… serves them, through the same lib/ functions.
 * The webhooks workload's commands (its manifest's `cli`): the CLI program gives them its helpers.
 */
import type { Command } from "commander";
import type { ActingOpts } from "../jobs/cli-kit";
import type { CliCommands } from "../jobs/task";
import { listEndpoints, recoverEndpoint, sendTestEvent, updateEndpoint } from "./service";

type Opts = ActingOpts & { json?: boolean };

/** An endpoint's circuit, in the pages' words (lib/client/webhooks.ts CIRCUIT_WORDS). */
const CIRCUIT_STATE = { closed: "sending", open: "paused (circuit open)", half_open: "testing (circuit half-open)" };

export const webhooksCommands: CliCommands = (program, { actingAs, actingOptions, handler, jsonOption, table }) => {
  const withId = (cmd: Command) => actingOptions(cmd.argument("<id>", "the endpoint's id"), { emailAlias: true });
  const webhooks = program.command("webhooks").description("webhook endpoints: list, test, enable, disable, recover");

  jsonOption(
    actingOptions(
      webhooks.command("list").description("the tenant's endpoints and their health (platform admins: all)"),
      {
        emailAlias: true,
      },
    ),
  ).action(
    handler<Opts>(async ({ opts, print, note }) => {
      const { principal, tenant } = await actingAs(opts);
      const endpoints = await listEndpoints(principal, principal.isPlatformAdmin && tenant ? { tenant } : {});
      const admin = principal.isPlatformAdmin;
      print({ endpoints }, () =>
        endpoints.length
          ? table(
              // The deliveries' words (docs/WEBHOOKS.md): the API's `dead` count is the failed deliveries.
              ["ID", ...(admin ? ["TENANT"] : []), "URL", "EVENTS", "STATE", "24H OK", "PENDING", "FAILED"],
              endpoints.map((e) => [
                e.id,
                ...(admin ? [e.tenant] : []),
                e.url,
                e.events.join(","),
                e.disabled ? `disabled: ${e.disabledReason ?? ""}` : CIRCUIT_STATE[e.health.circuit],
                e.health.successRate24h === null ? "-" : `${Math.round(e.health.successRate24h * 100)}%`,
                String(e.health.pending),
                String(e.health.dead),
              ]),
            )
          : "",
      );
      if (!endpoints.length) note("No webhook endpoints.");
    }),
  );

  jsonOption(withId(webhooks.command("test").description("send the endpoint a signed ping"))).action(
    handler<Opts>(async ({ opts, args, print }) => {
      const out = await sendTestEvent((await actingAs(opts)).principal, args[0] as string);
      print(out, () => `ping ${out.messageId} queued (delivery ${out.deliveryId})`);
    }),
  );

  for (const [name, disabled] of [
    ["enable", false],
    ["disable", true],
  ] as const) {
    jsonOption(
      withId(webhooks.command(name).description(`${name} the endpoint${disabled ? " (nothing is sent to it)" : ""}`)),
    ).action(
      handler<Opts>(async ({ opts, args, print }) => {
        const e = await updateEndpoint((await actingAs(opts)).principal, args[0] as string, { disabled });
        print(e, () => `${e.id} ${disabled ? "disabled" : "enabled"}`);
      }),
    );
  }

  jsonOption(
    withId(
      webhooks
        .command("recover")
        .description("send again every delivery to the endpoint that failed since a time")
        .requiredOption("--since <time>", "an ISO time (required)"),
    ),
  ).action(
    handler<Opts & { since: string }>(async ({ opts, args, print }) => {
      const out = await recoverEndpoint((await actingAs(opts)).principal, args[0] as string, { since: opts.since });
      print(out, () => `${out.replayed} failed deliveries replayed (now pending)`);
    }),
  );
};
