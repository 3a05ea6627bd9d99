/** The notifications workload's configuration (read through lib/env.ts, listed in its manifest). */
import { z } from "zod";
import { defineSettings, intFrom } from "../env";

export const notificationSettings = defineSettings({
  /** How often the operators' dead-letter digest goes out (one window), in ms: at most one mail per operator and tenant per window. */
  NOTIFY_DIGEST_WINDOW_MS: intFrom(3_600_000, 200, 7 * 24 * 3_600_000),
  /** Dead letters a digest names one by one (the rest are counted). */
  NOTIFY_DIGEST_MAX_LISTED: intFrom(20, 1, 500),
  /** Multiplies the mail retry schedule (10 s, 1 min, 5 min, 30 min, 2 h, 6 h): 0.001 makes it milliseconds, for tests. */
  NOTIFY_RETRY_SCALE: z.coerce.number().min(0).max(100).default(1),
});
