/**
 * The client side of bench:sse, in its own process: SSE_CLIENTS connections to
 * SSE_URL with a Bearer token, each noting when every `job` event arrives (by
 * the event's seq). On SIGUSR2 it prints "<seq> <epoch ms>" per receipt, then END.
 */
import http from "node:http";

const url = new URL(process.env.SSE_URL!);
const token = process.env.SSE_TOKEN!;
const n = Number(process.env.SSE_CLIENTS ?? "1");
const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
const receipts: string[] = [];
let connected = 0;

for (let i = 0; i < n; i++) {
  const req = http.get(
    { host: url.hostname, port: url.port, path: url.pathname, agent, headers: { Authorization: `Bearer ${token}` } },
    (res) => {
      if (res.statusCode !== 200) {
        console.error(`client ${i}: HTTP ${res.statusCode}`);
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
          const data = frame.slice(frame.indexOf("data: ") + 6);
          const seq = /"seq":(\d+)/.exec(data)?.[1];
          if (seq) receipts.push(`${seq} ${at}`);
        }
      });
    },
  );
  req.on("error", (e) => console.error(`client ${i}: ${e.message}`));
}

process.on("SIGUSR2", () => {
  process.stdout.write(`${receipts.join("\n")}\nEND\n`, () => {});
});
process.on("SIGTERM", () => process.exit(0));
