/**
 * The scheduler loop, one per worker process (every process runs one: there
 * is no leader to lose). It sleeps until the next schedule or delayed job is
 * due (at most SCHEDULER_MAX_SLEEP_MS), or until told that something changed
 * (NOTIFY conveyor_schedules: a schedule made, edited or resumed, a delayed
 * job created), then runs a tick: promote due delayed jobs, materialize due
 * schedules, release buffered runs. Concurrent ticks in other processes take
 * other rows (SKIP LOCKED); the database's unique key is the last word.
 */
import pg from "pg";
import { directDatabaseUrl } from "../env";
import { scheduleSettings } from "./settings";
import { materializeDue, msUntilNextDue, promoteDelayedJobs, SCHEDULER_CHANNEL, type TickResult } from "./materialize";
import { logger } from "../log";

export async function schedulerTick(): Promise<TickResult> {
  const promoted = await promoteDelayedJobs();
  const r = await materializeDue();
  return { ...r, promoted };
}

export class Scheduler {
  private timer: NodeJS.Timeout | null = null;
  private client: pg.Client | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = false;

  /** `log` gets what the scheduler did and its problems (`warn`); the process's log by default. */
  constructor(
    private readonly log: (line: string, level?: "info" | "warn") => void = (l, level = "info") => logger[level](l),
  ) {}

  async start(): Promise<void> {
    await this.listen().catch((e: Error) => this.log(`[scheduler] LISTEN failed: ${e.message}; polling`, "warn"));
    this.wake();
  }

  /** Runs a tick soon; a wake during a tick runs one more after it. */
  wake(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.running = (async () => {
      let sleepMs = scheduleSettings().SCHEDULER_MAX_SLEEP_MS;
      do {
        this.again = false;
        try {
          const r = await schedulerTick();
          if (r.runs || r.missed || r.skipped || r.quotaSkipped) {
            this.log(
              `[scheduler] ${r.runs} run(s) from ${r.schedules} schedule(s)` +
                (r.missed ? `, ${r.missed} missed` : "") +
                (r.skipped ? `, ${r.skipped} skipped for an overlap` : "") +
                (r.quotaSkipped ? `, ${r.quotaSkipped} refused by a quota` : ""),
            );
          }
          const due = await msUntilNextDue();
          sleepMs = Math.min(scheduleSettings().SCHEDULER_MAX_SLEEP_MS, due ?? Infinity);
        } catch (e) {
          this.log(`[scheduler] tick failed: ${(e as Error).message}`, "warn");
        }
      } while (this.again && !this.stopped);
      return sleepMs;
    })().then((sleepMs) => {
      this.running = null;
      // A few ms past the due time: now() in the database has reached it.
      if (!this.stopped) this.timer = setTimeout(() => this.wake(), Math.ceil(sleepMs) + 2);
    });
  }

  private async listen(): Promise<void> {
    const client = new pg.Client({ connectionString: directDatabaseUrl(), application_name: "conveyor-scheduler" });
    client.on("notification", () => this.wake());
    const lost = () => {
      if (this.client !== client) return;
      this.client = null;
      client.end().catch(() => {});
      // The loop still wakes every SCHEDULER_MAX_SLEEP_MS; LISTEN again shortly.
      if (!this.stopped) setTimeout(() => void this.listen().catch(() => {}), 1_000);
    };
    client.on("error", lost);
    client.on("end", lost);
    this.client = client;
    try {
      await client.connect();
      await client.query(`LISTEN ${SCHEDULER_CHANNEL}`);
    } catch (err) {
      lost();
      throw err;
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => {});
    await this.running;
  }
}
