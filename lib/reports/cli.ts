/**
 * `reports create|get`: as POST /api/v1/reports and GET /api/v1/reports/{id} do, through the
 * same lib/ functions (the reports workload's manifest lists them; the CLI program gives them its helpers).
 */
import type { ActingOpts } from "../jobs/cli-kit";
import type { CliCommands } from "../jobs/task";
import { getReport, requestReport } from "./service";
import { stateLabel } from "../jobs/states";

type Opts = ActingOpts & { json?: boolean };

export const reportsCommands: CliCommands = (program, { actingAs, actingOptions, handler, jsonOption, table }) => {
  const reports = program.command("reports").description("job-outcome reports of a tenant: create, get");

  jsonOption(
    actingOptions(
      reports
        .command("create")
        .description("count the tenant's jobs created in a window by type and status (a job: prints its id)")
        .requiredOption("--from <time>", "the window's start, an ISO time (required)")
        .requiredOption("--to <time>", "the window's end, an ISO time (required)")
        .option("--format <format>", "the file's format: json or csv", "json"),
    ),
  ).action(
    handler<Opts & { from: string; to: string; format: string }>(async ({ opts, print }) => {
      const { principal } = await actingAs(opts);
      const job = await requestReport(principal, { from: opts.from, to: opts.to, format: opts.format });
      print(job, () => job.id);
    }),
  );

  jsonOption(
    actingOptions(
      reports.command("get").description("a report: its state, then its counts").argument("<id>", "the report's id"),
    ),
  ).action(
    handler<Opts>(async ({ opts, args, print }) => {
      const { principal } = await actingAs(opts);
      const r = await getReport(principal, args[0] as string);
      print(r, () =>
        r.report
          ? `${r.report.total} jobs from ${r.report.from} to ${r.report.to} (${r.report.downloadUrl})\n` +
            table(
              ["TYPE", "STATUS", "COUNT"],
              r.report.rows.map((row) => [row.type, stateLabel(row.status), String(row.count)]),
            )
          : `${r.job.id} ${stateLabel(r.job.status)}`,
      );
    }),
  );
};
