/**
 * The baseline of bench:throughput: bare graphile-worker running a no-op task,
 * recording add→start latency from the payload. On SIGTERM it writes the
 * latencies (ms) of the `latency` phase to the file named by argv[2].
 */
import { writeFileSync } from "node:fs";
import { run } from "graphile-worker";

async function main() {
  const [, , outFile, concurrency] = process.argv;
  const latencies: number[] = [];
  const runner = await run({
    connectionString: process.env.DATABASE_URL,
    concurrency: Number(concurrency ?? 8),
    noHandleSignals: true,
    pollInterval: 2_000,
    parsedCronItems: [],
    taskList: {
      bare_noop: async (payload) => {
        const p = payload as { addedAt: number; phase: string };
        if (p.phase === "latency") latencies.push(Date.now() - p.addedAt);
      },
    },
  });
  console.log("ready");
  process.on("SIGTERM", () => {
    void runner.stop().then(() => {
      writeFileSync(outFile!, JSON.stringify(latencies));
      process.exit(0);
    });
  });
}

void main();
