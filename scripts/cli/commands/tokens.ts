/**
 * `tokens create|list|revoke` (`token` too): the acting user's own API tokens, as
 * GET/POST /api/v1/tokens and DELETE /api/v1/tokens/{id} do, through the same
 * lib/ functions. A token acts as its user in the tenant it was made in.
 */
import type { Command } from "commander";
import { createApiToken, listApiTokens, revokeApiToken } from "@/lib/auth/tokens";
import {
  actingAs,
  actingOptions,
  CliError,
  EXIT,
  handler,
  jsonOption,
  when,
  wholeNumber,
  type ActingOpts,
} from "../run";
import { table } from "../table";

type CreateOpts = ActingOpts & { json?: boolean; name: string; readOnly?: boolean; expiresInDays?: number };

export function tokensCommands(program: Command): void {
  const tokens = program
    .command("tokens")
    .alias("token")
    .description("the acting user's API tokens: create, list, revoke");

  jsonOption(
    actingOptions(
      tokens
        .command("create")
        .description("make an API token for the acting user, in their tenant (--tenant: which); printed once")
        .option("--name <label>", "what it is for", "cli")
        .option("--read-only", "GET and streams only (default: read and write)")
        .option(
          "--expires-in-days <n>",
          "it stops working after n days (1-3650; default: when revoked)",
          wholeNumber(1, 3650),
        ),
      { emailAlias: true },
    ),
  )
    .addHelpText(
      "after",
      "\nSend it as: Authorization: Bearer <token>. Only its hash is kept: it cannot be shown again.",
    )
    .action(
      handler<CreateOpts>(async ({ opts, print, note }) => {
        const { principal, tenant } = await actingAs(opts);
        // A platform admin acting *on* a tenant they are not a member of would get a token without one.
        if (tenant && principal.tenantSlug !== tenant) {
          throw new CliError(`--tenant: ${principal.email} is not a member of ${tenant}`, EXIT.notFound);
        }
        const created = await createApiToken(principal, {
          name: opts.name,
          scopes: opts.readOnly ? ["read"] : ["read", "write"],
          ...(opts.expiresInDays === undefined ? {} : { expiresInDays: opts.expiresInDays }),
        });
        print(created, () => created.token);
        note("This token is shown once. Send it as: Authorization: Bearer <token>");
      }),
    );

  jsonOption(
    actingOptions(tokens.command("list").description("the acting user's live tokens (never their secrets)"), {
      emailAlias: true,
    }),
  ).action(
    handler<ActingOpts & { json?: boolean }>(async ({ opts, print, note }) => {
      const { principal } = await actingAs(opts);
      const rows = await listApiTokens(principal);
      print({ tokens: rows }, () =>
        rows.length
          ? table(
              ["ID", "NAME", "PREFIX", "SCOPES", "CREATED", "EXPIRES", "LAST USED"],
              rows.map((t) => [
                t.id,
                t.name,
                `${t.prefix}…`,
                t.scopes.join(","),
                when(t.createdAt),
                t.expiresAt ? when(t.expiresAt) : "never",
                when(t.lastUsedAt),
              ]),
            )
          : "",
      );
      if (!rows.length) note("No tokens.");
    }),
  );

  jsonOption(
    actingOptions(
      tokens.command("revoke").description("revoke one of the acting user's tokens").argument("<id>", "the token's id"),
      { emailAlias: true },
    ),
  ).action(
    handler<ActingOpts & { json?: boolean }>(async ({ opts, args, print }) => {
      const { principal } = await actingAs(opts);
      await revokeApiToken(principal, args[0] as string);
      print({ id: args[0], revoked: true }, () => `${String(args[0])} revoked`);
    }),
  );
}
