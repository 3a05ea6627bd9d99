/**
 * The CLI's commands as one commander program: the help at every level
 * (`--help`, `jobs --help`, `jobs list --help`) is made from these definitions.
 * The engine's commands are files of ./commands; a workload's are in its own folder, listed by
 * its manifest (`cli`), and come from the registry with the helpers below (lib/jobs/cli-kit.ts).
 */
import { Command } from "commander";
import type { CliKit } from "@/lib/jobs/cli-kit";
import { cliCommands } from "@/lib/jobs/registry";
import { deadLettersCommands } from "./commands/dead-letters";
import { jobsCommands } from "./commands/jobs";
import { pausesCommands } from "./commands/pauses";
import { queuesCommands } from "./commands/queues";
import { tenantsCommands } from "./commands/tenants";
import { tokensCommands } from "./commands/tokens";
import { usersCommands } from "./commands/users";
import { actingAs, actingOptions, cut, exitCodesHelp, handler, jsonOption, when, wholeNumber } from "./run";
import { table } from "./table";

/** What a workload's commands get from the program. */
const kit: CliKit = { actingAs, actingOptions, cut, handler, jsonOption, table, when, wholeNumber };

export function buildProgram(): Command {
  const program = new Command("npm run cli --")
    .description(
      "Conveyor's command line. Commands act on the database (DATABASE_URL, or the embedded one) as the user " +
        "named by --as, through the same functions as the HTTP API: authorized and audited as that user.",
    )
    .usage("<command> <subcommand> [options]")
    .helpCommand(false)
    .showSuggestionAfterError(true)
    // Errors are printed once, by scripts/cli.ts, as one line.
    .configureOutput({ outputError: () => {} })
    .exitOverride()
    .addHelpText("after", exitCodesHelp);

  jobsCommands(program);
  deadLettersCommands(program);
  pausesCommands(program);
  queuesCommands(program);
  tokensCommands(program);
  tenantsCommands(program);
  usersCommands(program);
  for (const add of cliCommands()) add(program, kit);
  // `jobs help list` would be a second way to say `jobs list --help`.
  for (const group of program.commands) group.helpCommand(false);
  return program;
}
