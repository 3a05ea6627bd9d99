/**
 * What stops npm start's processes that cannot follow the supervisor themselves
 * when it dies by SIGKILL, an OOM kill or a crash (its web server and workers
 * have an IPC channel and stop on their own: lib/parent.ts). A small shell
 * process, in a process group of its own, reads the supervisor's instructions
 * on a pipe; when the pipe closes without a `stop` — the supervisor is gone,
 * however it ended — it:
 *  1. SIGTERMs the short-lived children named with `kill` (a `next build` under way);
 *  2. waits, up to `graceSeconds`, for the processes named with `wait` (the web
 *     server and the workers, finishing or handing back their jobs) to exit;
 *  3. stops the embedded Postgres named with `postgres` (a fast shutdown,
 *     SIGINT), if the `postmaster.pid` of its data directory still names a live
 *     `postgres` process: Postgres has no IPC channel to notice its parent's end.
 * A clean stop of the supervisor says `stop` first, and the guard just exits.
 */
import { spawn, type ChildProcess } from "node:child_process";

const GUARD_SCRIPT = String.raw`
trap '' INT HUP TERM
grace="$1"; pgdir=""; waiting=""; killing=""
drop() { out=""; for p in $2; do [ "$p" = "$1" ] || out="$out $p"; done; echo "$out"; }
while read -r verb arg; do
  case "$verb" in
    stop) exit 0 ;;
    postgres) pgdir="$arg" ;;
    wait) waiting="$waiting $arg" ;;
    kill) killing="$killing $arg" ;;
    done) waiting=$(drop "$arg" "$waiting"); killing=$(drop "$arg" "$killing") ;;
  esac
done
echo "[guard] npm start's supervisor is gone: stopping what it left" >&2
for p in $killing; do kill -TERM "$p" 2>/dev/null; done
i=0
while [ "$i" -lt "$grace" ]; do
  alive=""
  for p in $waiting; do kill -0 "$p" 2>/dev/null && alive=1; done
  [ -z "$alive" ] && break
  sleep 1; i=$((i + 1))
done
if [ -n "$pgdir" ]; then
  pg=$(head -n 1 "$pgdir/postmaster.pid" 2>/dev/null)
  comm=$(cat "/proc/$pg/comm" 2>/dev/null || ps -o comm= -p "$pg" 2>/dev/null)
  if [ -n "$pg" ] && [ "$comm" = postgres ]; then
    echo "[guard] stopping the embedded Postgres (pid $pg)" >&2
    kill -INT "$pg"
  fi
fi
`;

export type OrphanGuard = {
  /** The embedded Postgres this supervisor started, by its data directory. */
  postgres(dataDir: string): void;
  /** A child that stops itself when the supervisor dies: waited for before Postgres is stopped. */
  waitFor(pid: number): void;
  /** A short-lived child that does not follow the supervisor: SIGTERMed if the supervisor dies. */
  killOnDeath(pid: number): void;
  /** The child `pid` has exited. */
  forget(pid: number): void;
  /** A clean stop: the guard exits doing nothing. */
  release(): Promise<void>;
};

/** Starts the guard of this supervisor's children (see above); `graceMs`: how long its children may take to stop. */
export function startOrphanGuard(graceMs: number): OrphanGuard {
  const child: ChildProcess = spawn("sh", ["-c", GUARD_SCRIPT, "conveyor-guard", String(Math.ceil(graceMs / 1000))], {
    stdio: ["pipe", "ignore", "inherit"],
    detached: true,
  });
  child.on("error", () => {}); // no sh: nothing to guard with (the supervisor still stops its children itself)
  child.unref();
  const stdin = child.stdin!;
  stdin.on("error", () => {});
  // The pipe must not keep the supervisor alive.
  (stdin as unknown as { unref?: () => void }).unref?.();
  const say = (line: string) => {
    if (!stdin.destroyed) stdin.write(`${line}\n`);
  };
  return {
    postgres: (dataDir) => say(`postgres ${dataDir}`),
    waitFor: (pid) => say(`wait ${pid}`),
    killOnDeath: (pid) => say(`kill ${pid}`),
    forget: (pid) => say(`done ${pid}`),
    release: () =>
      new Promise<void>((resolve) => {
        if (stdin.destroyed) return resolve();
        stdin.end("stop\n", () => resolve());
      }),
  };
}
