/**
 * What the CLI program (scripts/cli) hands a workload's commands (a manifest's `cli`):
 * its helpers, so a workload's commands live in its own folder without lib/ importing
 * scripts/. The program builds the kit from scripts/cli/run.ts and scripts/cli/table.ts.
 */
import type { Command } from "commander";
import type { Principal } from "../auth/principal";

export type ActingOpts = { as?: string; email?: string; tenant?: string };

/** What a command's handler gets: its options, its arguments, and how to print. */
export type CliCtx<O> = {
  opts: O;
  args: unknown[];
  /** Prints `value` as JSON under --json, else the text `text()` makes (nothing when it is empty). */
  print(value: unknown, text: () => string): void;
  /** A note for people (stderr), left out under --json. */
  note(line: string): void;
};

export type CliKit = {
  /** `--as` and `--tenant`: who acts, and in (or on) which tenant. */
  actingOptions(cmd: Command, opts?: { required?: boolean; emailAlias?: boolean; tenant?: boolean }): Command;
  /** `--json`. */
  jsonOption(cmd: Command): Command;
  /** The user of `--as` as the API would see them, and the tenant of `--tenant`. */
  actingAs(opts: ActingOpts): Promise<{ principal: Principal; tenant?: string }>;
  /** Wraps a command's handler: opens the database, runs it, closes it; maps lib/'s errors to the command's options. */
  handler<O extends { json?: boolean }>(
    fn: (ctx: CliCtx<O>) => Promise<void>,
    fields?: Record<string, string>,
  ): (...a: unknown[]) => Promise<void>;
  /** A whole number option or argument, checked by commander. */
  wholeNumber(min: number, max: number): (raw: string) => number;
  /** A text table. */
  table(headers: string[], rows: string[][]): string;
  /** A date for tables (`2026-12-01 13:05:07`, UTC), or `-`. */
  when(iso: string | null | undefined): string;
  /** Text cut to `max` characters on one line. */
  cut(s: string | null | undefined, max?: number): string;
};
