/* eslint-disable @typescript-eslint/no-require-imports -- plain CommonJS, preloaded with --require */
// Preloaded by bench:sse with SSE_BENCH_CPU_PROF=<dir> (NODE_OPTIONS=--require, as --cpu-prof is not
// allowed there): SIGUSR2 starts a CPU profile of this process, the next SIGUSR2 writes it to
// <dir>/<pid>-<n>.cpuprofile (open it in Chrome's DevTools).
const inspector = require("node:inspector");
const fs = require("node:fs");
const path = require("node:path");

const session = new inspector.Session();
session.connect();
let on = false;
let n = 0;
process.on("SIGUSR2", () => {
  if (!on) {
    on = true;
    session.post("Profiler.enable", () =>
      session.post("Profiler.setSamplingInterval", { interval: 500 }, () => session.post("Profiler.start")),
    );
    return;
  }
  on = false;
  session.post("Profiler.stop", (err, result) => {
    if (err) return;
    const file = path.join(process.env.SSE_PROF_DIR, `${process.pid}-${n++}.cpuprofile`);
    fs.writeFileSync(file, JSON.stringify(result.profile));
  });
});
