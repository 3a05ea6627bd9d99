/** Small helpers the test runner, the tests that start processes and the benchmarks share. */
import { createServer } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";

/** A TCP port on 127.0.0.1 that nothing listens on (the OS picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

/** Polls `fn` every `everyMs` until it returns something truthy; past `timeoutMs`, fails naming `what` (and `explain()`). */
export async function waitFor<T>(
  what: string,
  fn: () => Promise<T | null | undefined | false>,
  timeoutMs: number,
  explain: () => Promise<string> | string = () => "",
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const v = await fn();
    if (v) return v;
    await sleep(everyMs);
  }
  throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}${await explain()}`);
}

/** Whether process `pid` still exists (a zombie counts until its parent reaps it). */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
