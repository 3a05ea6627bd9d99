/**
 * The client side of bench:sse, in its own process: SSE_CLIENTS connections to
 * SSE_URL, stream i (counted from SSE_OFFSET) with the Bearer token
 * SSE_TOKENS[i % tokens], each noting when every `job` event arrives (by the
 * event's job and seq). At most SSE_CONNECTING streams are being opened at once.
 * On SIGUSR2 it writes "<job> <seq> <epoch ms>" per receipt to SSE_OUT, then
 * prints END.
 */
import { writeFileSync } from "node:fs";
import http from "node:http";

const url = new URL(process.env.SSE_URL!);
const tokens = process.env.SSE_TOKENS!.split(",");
const n = Number(process.env.SSE_CLIENTS ?? "1");
const offset = Number(process.env.SSE_OFFSET ?? "0");
const connecting = Number(process.env.SSE_CONNECTING ?? "100");
const out = process.env.SSE_OUT!;
const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });

// Receipts as flat numbers (job index, seq, time): a string per receipt would cost far more
// memory at 10,000 streams.
const jobIndex = new Map<string, number>();
const receipts: number[] = [];
let connected = 0;
let inFlight = 0;
let next = 0;

const JOB = /"jobId":"([^"]+)","seq":(\d+)/;

function open(i: number): void {
  inFlight++;
  const token = tokens[(offset + i) % tokens.length]!;
  const req = http.get(
    { host: url.hostname, port: url.port, path: url.pathname, agent, headers: { Authorization: `Bearer ${token}` } },
    (res) => {
      inFlight--;
      openMore();
      if (res.statusCode !== 200) {
        console.error(`client ${offset + i}: HTTP ${res.statusCode}`);
        res.resume();
        return;
      }
      connected++;
      if (connected === n) console.log(`connected ${n}`);
      let buf = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        const at = performance.timeOrigin + performance.now();
        buf += chunk;
        let idx: number;
        while ((idx = buf.indexOf("\n\n")) !== -1) {
          const frame = buf.slice(0, idx);
          buf = buf.slice(idx + 2);
          if (!frame.includes("event: job")) continue;
          const m = JOB.exec(frame);
          if (!m) continue;
          let j = jobIndex.get(m[1]!);
          if (j === undefined) jobIndex.set(m[1]!, (j = jobIndex.size));
          receipts.push(j, Number(m[2]), at);
        }
      });
    },
  );
  req.on("error", (e) => {
    inFlight--;
    console.error(`client ${offset + i}: ${e.message}`);
    openMore();
  });
}

function openMore(): void {
  while (inFlight < connecting && next < n) open(next++);
}
openMore();

process.on("SIGUSR2", () => {
  const ids = [...jobIndex.keys()];
  const lines: string[] = [];
  for (let k = 0; k < receipts.length; k += 3) lines.push(`${ids[receipts[k]!]} ${receipts[k + 1]} ${receipts[k + 2]}`);
  writeFileSync(out, lines.join("\n") + "\n");
  process.stdout.write("END\n");
});
process.on("SIGTERM", () => process.exit(0));
