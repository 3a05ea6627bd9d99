/**
 * `npm start` / `npm run dev`: launches scripts/supervisor.ts in a process
 * group of its own and relays Ctrl-C and SIGTERM to it once.
 *
 * Why: a terminal's Ctrl-C reaches its whole foreground process group. The
 * supervisor's children — the embedded Postgres above all — must not get it
 * directly, or Postgres would shut down fast while the worker is still
 * finishing its jobs. The supervisor stops them in order: web and worker
 * first, Postgres last.
 *
 * The supervisor follows this process through an IPC channel: if this one is
 * killed (a SIGKILL of its whole process group, as a CI runner or a process
 * manager that gives up sends), the supervisor stops everything. If the
 * supervisor is killed, this one says so and ends; the supervisor's children
 * stop on their own (docs/DEPLOY.md, "When a process dies").
 */
import { spawn } from "node:child_process";
import path from "node:path";

const supervisor = spawn(
  process.execPath,
  ["--import", "tsx", path.join(__dirname, "supervisor.ts"), ...process.argv.slice(2)],
  {
    // The IPC channel: should this launcher die without a word (SIGKILL of its process group, an
    // OOM kill), the supervisor sees the channel close and stops everything (lib/parent.ts).
    stdio: ["inherit", "inherit", "inherit", "ipc"],
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
supervisor.on("exit", (code, signal) => {
  if (signal && !relayed) {
    // Killed (SIGKILL, the OOM killer) or crashed: its children stop by themselves when they see it
    // gone (the web server and the workers) or are stopped by its guard (the embedded Postgres).
    // npm start ends too, rather than start another supervisor over what may still be stopping.
    console.error(
      `[start] the supervisor was killed (${signal}); its web server, workers and embedded Postgres stop on their own. ` +
        "npm start ends: run it again to start anew.",
    );
  }
  process.exit(code ?? (signal ? 1 : 0));
});
