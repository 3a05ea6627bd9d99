/**
 * `schedules list|pause|resume|trigger`: as GET /api/v1/schedules and POST
 * /api/v1/schedules/{id}/pause|resume|trigger do, through the same lib/ functions.
 * The schedules workload's commands (its manifest's `cli`): the CLI program gives them its helpers.
 */
import type { ActingOpts } from "../jobs/cli-kit";
import type { CliCommands } from "../jobs/task";
import { listSchedules, pauseSchedule, triggerSchedule, type ScheduleDto } from "./service";
import { stateLabel } from "../jobs/states";

const scheduleLine = (s: ScheduleDto) =>
  `${s.id}  ${s.name}: ${s.paused ? "paused" : `active, next run ${s.nextRunAt ?? "none"}`} (${s.cron}, ${s.timezone})`;

type Opts = ActingOpts & { json?: boolean };

export const schedulesCommands: CliCommands = (program, { actingAs, actingOptions, handler, jsonOption, table }) => {
  const schedules = program
    .command("schedules")
    .description("recurring jobs (exports on a cron): list, pause, resume, trigger");

  jsonOption(
    actingOptions(schedules.command("list").description("the tenant's schedules (platform admins: every tenant's)"), {
      emailAlias: true,
    }),
  ).action(
    handler<Opts>(async ({ opts, print, note }) => {
      const { principal, tenant } = await actingAs(opts);
      const { schedules: rows } = await listSchedules(principal, principal.isPlatformAdmin && tenant ? { tenant } : {});
      const admin = principal.isPlatformAdmin;
      print({ schedules: rows }, () =>
        rows.length
          ? table(
              ["ID", ...(admin ? ["TENANT"] : []), "NAME", "CRON", "ZONE", "STATE", "NEXT RUN", "LAST RUN"],
              rows.map((s) => [
                s.id,
                ...(admin ? [s.tenant ?? ""] : []),
                s.name,
                s.cron,
                s.timezone,
                s.paused ? "paused" : "active",
                s.nextRunAt ?? "-",
                s.lastRun ? `${stateLabel(s.lastRun.status)} (${s.lastRun.scheduledFor})` : "-",
              ]),
            )
          : "",
      );
      if (!rows.length) note("No schedules.");
    }),
  );

  for (const [name, paused, what] of [
    ["pause", true, "pause a schedule: no new runs until it is resumed"],
    ["resume", false, "resume a schedule"],
  ] as const) {
    jsonOption(
      actingOptions(schedules.command(name).description(what).argument("<id>", "the schedule's id"), {
        emailAlias: true,
      }),
    ).action(
      handler<Opts>(async ({ opts, args, print }) => {
        const { principal } = await actingAs(opts);
        const s = await pauseSchedule(principal, args[0] as string, paused);
        print(s, () => scheduleLine(s));
      }),
    );
  }

  jsonOption(
    actingOptions(
      schedules
        .command("trigger")
        .description("run a schedule now (its overlap policy applies); prints the runs' job ids")
        .argument("<id>", "the schedule's id"),
      { emailAlias: true },
    ),
  ).action(
    handler<Opts>(async ({ opts, args, print, note }) => {
      const { principal } = await actingAs(opts);
      const out = await triggerSchedule(principal, args[0] as string);
      print(out, () => out.runs.join("\n"));
      note(
        `${out.runs.length} run(s) made` +
          (out.skipped ? `, ${out.skipped} skipped for an open run` : "") +
          (out.cancelled ? `, ${out.cancelled} open run(s) cancelled` : ""),
      );
    }),
  );
};
