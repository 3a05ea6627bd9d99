/**
 * `npm start` / `npm run dev`: launches scripts/supervisor.ts in a process
 * group of its own and relays Ctrl-C and SIGTERM to it once.
 *
 * Why: a terminal's Ctrl-C reaches its whole foreground process group. The
 * supervisor's children — the embedded Postgres above all — must not get it
 * directly, or Postgres would shut down fast while the worker is still
 * finishing its jobs. The supervisor stops them in order: web and worker
 * first, Postgres last.
 */
import { spawn } from "node:child_process";
import path from "node:path";

const supervisor = spawn(
  process.execPath,
  ["--import", "tsx", path.join(__dirname, "supervisor.ts"), ...process.argv.slice(2)],
  {
    stdio: "inherit",
    detached: true,
  },
);

let relayed = false;
const relay = () => {
  if (relayed) return;
  relayed = true;
  supervisor.kill("SIGTERM");
};
process.on("SIGINT", relay);
process.on("SIGTERM", relay);
process.on("SIGHUP", relay);
// If this launcher dies, take the supervisor down with it.
process.on("exit", () => {
  if (supervisor.exitCode === null) supervisor.kill("SIGTERM");
});
supervisor.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
