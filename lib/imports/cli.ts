/**
 * The imports workload's place in the CLI program (its manifest's `cli`): `imports …` goes over
 * the HTTP API with a token, not the database, so scripts/cli.ts hands it to scripts/cli/imports/
 * before commander parses anything; this entry gives it its line in `--help`.
 */
import type { CliCommands } from "../jobs/task";

export const importsCommands: CliCommands = (program) => {
  program
    .command("imports")
    .description("imports over the HTTP API with a token: create, get, list, errors (imports --help)")
    .helpOption(false)
    .allowUnknownOption()
    .allowExcessArguments();
};
