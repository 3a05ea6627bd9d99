/** The schedules workload's configuration (read through lib/env.ts, listed in its manifest). */
import { defineSettings, intFrom } from "../env";

export const scheduleSettings = defineSettings({
  /** An occurrence no scheduler reached within this long of its time was missed (its missed-run policy applies). */
  SCHEDULE_MISSED_AFTER_MS: intFrom(5_000, 500, 3_600_000),
  /** The longest a scheduler sleeps between looks (it also wakes when told, and when something is due). */
  SCHEDULER_MAX_SLEEP_MS: intFrom(1_000, 50, 60_000),
  /** The shortest interval a schedule's cron may run at, in seconds (a 6-field cron can say every second). */
  SCHEDULE_MIN_INTERVAL_SECONDS: intFrom(60, 1, 86_400),
  /** Schedules one tenant may have. */
  QUOTA_SCHEDULES_PER_TENANT: intFrom(100, 1, 1_000_000),
});
