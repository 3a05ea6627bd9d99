/** The reports workload's configuration (read through lib/env.ts, listed in its manifest). */
import { defineSettings, intFrom } from "../env";

export const reportSettings = defineSettings({
  /** The longest window one job-outcome report may cover, in days. */
  REPORT_MAX_WINDOW_DAYS: intFrom(92, 1, 3_660),
});
