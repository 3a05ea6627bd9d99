/**
 * The scheduler loop, one per worker process (every process runs one: there
 * is no leader to lose). It sleeps until the next schedule or delayed job is
 * due (at most SCHEDULER_MAX_SLEEP_MS), or until told that something changed
 * (NOTIFY conveyor_schedules: a schedule made, edited or resumed, a delayed
 * job created), then runs a tick: promote due delayed jobs, materialize due
 * schedules, release buffered runs. Concurrent ticks in other processes take
 * other rows (SKIP LOCKED); the database's unique key is the last word.
 */
import { scheduleSettings } from "./settings";
import { loop, serviceContext, type LoopService, type Service, type ServiceContext } from "../runtime/service";
import { materializeDue, msUntilNextDue, promoteDelayedJobs, SCHEDULER_CHANNEL, type TickResult } from "./materialize";

export async function schedulerTick(): Promise<TickResult> {
  const promoted = await promoteDelayedJobs();
  const r = await materializeDue();
  return { ...r, promoted };
}

/**
 * The scheduler as a service (the schedules workload lists it): a loop
 * (lib/runtime/service.ts) woken by `conveyor_schedules` through the process's
 * notifier, and after a reconnect; between wake-ups each tick says when the
 * next one is due.
 */
export class Scheduler implements Service {
  readonly name = "scheduler";
  private readonly loop: LoopService;

  /** `log` gets what the scheduler did and its problems (`warn`); the service context's log by default. */
  constructor(private readonly log?: (line: string, level?: "info" | "warn") => void) {
    this.loop = loop({
      name: this.name,
      everyMs: () => scheduleSettings().SCHEDULER_MAX_SLEEP_MS,
      runAtStart: true,
      wakeOn: [SCHEDULER_CHANNEL],
      run: async () => {
        const r = await schedulerTick();
        const lines =
          r.runs || r.missed || r.skipped || r.quotaSkipped
            ? [
                `${r.runs} run(s) from ${r.schedules} schedule(s)` +
                  (r.missed ? `, ${r.missed} missed` : "") +
                  (r.skipped ? `, ${r.skipped} skipped for an overlap` : "") +
                  (r.quotaSkipped ? `, ${r.quotaSkipped} refused by a quota` : ""),
              ]
            : [];
        const due = await msUntilNextDue();
        // A few ms past the due time: now() in the database has reached it.
        return { lines, nextInMs: Math.ceil(Math.min(scheduleSettings().SCHEDULER_MAX_SLEEP_MS, due ?? Infinity)) + 2 };
      },
    });
  }

  async start(ctx: ServiceContext = serviceContext("", this.name)): Promise<void> {
    const log = this.log;
    await this.loop.start(
      log ? { ...ctx, log: (line, level) => log(`[scheduler] ${line}`, level === "info" ? "info" : "warn") } : ctx,
    );
  }

  /** Runs a tick soon; a wake during a tick runs one more after it. */
  wake(): void {
    this.loop.wake();
  }

  async stop(): Promise<void> {
    await this.loop.stop();
  }
}
