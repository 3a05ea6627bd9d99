/** The schedules workload's pages: it has no job type of its own (its runs are other kinds' jobs). */
import type { JobKind } from "./types";

export const scheduleKind: JobKind = {
  name: "schedules",
  nav: [
    { href: "/schedules", label: "Schedules", for: "everyone", area: "user" },
    { href: "/ops/schedules", label: "Tenant schedules", for: "operators", area: "console" },
  ],
  types: {},
};
