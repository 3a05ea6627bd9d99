/**
 * The reports workload, end to end: POST /api/v1/reports (202), the job runs on a worker,
 * GET /api/v1/reports/{id} gives its counts and the download its file; another tenant's
 * report is a 404, a bad window a 400 naming the field; and the CLI's `reports` commands.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { GET as reportRoute } from "@/app/api/v1/reports/[id]/route";
import { GET as downloadRoute } from "@/app/api/v1/reports/[id]/download/route";
import { POST as createRoute } from "@/app/api/v1/reports/route";
import { createApiTokenForEmail } from "@/lib/auth/tokens";
import { pool } from "@/lib/db";
import { enqueueJob } from "@/lib/jobs/enqueue";
import type { ReportDto } from "@/lib/reports/service";
import { useTestDatabase } from "../helpers/db";
import { drainJobs } from "../helpers/fixtures";

const fx = useTestDatabase({ seed: 0.001 });
const execFileAsync = promisify(execFile);

/** `node --import tsx scripts/cli.ts …`, as `npm run cli -- …` runs it, on this file's database. */
function cli(...args: string[]): Promise<{ stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: fx.database.url };
  for (const key of ["NODE_TEST_CONTEXT", "TEST_SERVER_URL", "TEST_TEMPLATE_DB"]) delete env[key];
  return execFileAsync(process.execPath, ["--import", "tsx", "scripts/cli.ts", ...args], { env });
}

const post = (token: string, body: unknown) =>
  createRoute(
    new Request("http://test/api/v1/reports", {
      method: "POST",
      headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
      body: JSON.stringify(body),
    }),
    { params: Promise.resolve({}) },
  );
const get = (token: string, id: string, download = false) =>
  (download ? downloadRoute : reportRoute)(
    new Request(`http://test/api/v1/reports/${id}${download ? "/download" : ""}`, {
      headers: { Authorization: `Bearer ${token}` },
    }),
    { params: Promise.resolve({ id }) },
  );

describe("reports", () => {
  test("POST → worker → GET: the tenant's jobs in the window, counted by type and status, and its CSV file", async () => {
    // Jobs of the window: three probes (succeeded) and one of another tenant (not counted).
    for (let i = 0; i < 3; i++) await enqueueJob({ tenantId: fx.p.acmeId, type: "probe", input: { sleepMs: 0 } });
    await enqueueJob({ tenantId: fx.p.globexId, type: "probe", input: { sleepMs: 0 } });
    await drainJobs();
    const from = new Date(Date.now() - 3_600_000).toISOString();
    const to = new Date(Date.now() + 60_000).toISOString();

    const ada = await createApiTokenForEmail("ada@acme.test", "reports");
    const res = await post(ada, { from, to, format: "csv" });
    assert.equal(res.status, 202);
    const job = (await res.json()) as { id: string; status: string; type: string };
    assert.equal(job.type, "job_report");
    assert.equal(res.headers.get("location"), `/api/v1/reports/${job.id}`);

    const before = (await (await get(ada, job.id)).json()) as ReportDto;
    assert.equal(before.report, null, "no counts before it ran");
    assert.equal((await get(ada, job.id, true)).status, 409, "nothing to download yet");

    await drainJobs();
    const done = (await (await get(ada, job.id)).json()) as ReportDto;
    assert.equal(done.job.status, "succeeded");
    const probes = done.report!.rows.find((r) => r.type === "probe" && r.status === "succeeded");
    const { rows: expected } = await pool().query<{ n: number }>(
      `SELECT count(*)::int AS n FROM jobs WHERE tenant_id = $1 AND type = 'probe' AND status = 'succeeded'
          AND created_at >= $2 AND created_at < $3`,
      [fx.p.acmeId, from, to],
    );
    assert.equal(probes?.count, expected[0]!.n);
    assert.ok(probes!.count >= 3);
    assert.equal(done.report!.downloadUrl, `/api/v1/reports/${job.id}/download`);

    const file = await get(ada, job.id, true);
    assert.equal(file.status, 200);
    const lines = (await file.text()).trim().split("\n");
    assert.equal(lines[0], "type,status,count");
    assert.ok(lines.includes(`probe,succeeded,${probes!.count}`), lines.join("\n"));

    // Another tenant's member sees no such report.
    const gus = await createApiTokenForEmail("gus@globex.test", "reports");
    assert.equal((await get(gus, job.id)).status, 404);
    assert.equal((await get(gus, job.id, true)).status, 404);
  });

  test("a bad window is a 400 naming the field (REPORT_MAX_WINDOW_DAYS)", async () => {
    const ada = await createApiTokenForEmail("ada@acme.test", "reports-bad");
    const now = Date.now();
    for (const [body, field] of [
      [{ from: new Date(now).toISOString(), to: new Date(now - 1000).toISOString() }, "to"],
      [{ from: new Date(now - 400 * 86_400_000).toISOString(), to: new Date(now).toISOString() }, "to"],
      [{ from: "yesterday", to: new Date(now).toISOString() }, "from"],
      [{ from: new Date(now - 1000).toISOString(), to: new Date(now).toISOString(), format: "xml" }, "format"],
    ] as const) {
      const res = await post(ada, body);
      assert.equal(res.status, 400, JSON.stringify(body));
      const err = (await res.json()) as { error: { fields?: { path: string }[] } };
      assert.equal(err.error.fields?.[0]?.path, field, JSON.stringify(body));
    }
  });

  test("npm run cli -- reports create|get", async () => {
    const from = new Date(Date.now() - 3_600_000).toISOString();
    const to = new Date(Date.now() + 60_000).toISOString();
    const created = await cli("reports", "create", "--as", "ada@acme.test", "--from", from, "--to", to);
    const id = created.stdout.trim();
    assert.match(id, /^[0-9a-f-]{36}$/);
    await drainJobs();
    const got = await cli("reports", "get", id, "--as", "ada@acme.test", "--json");
    const dto = JSON.parse(got.stdout) as ReportDto;
    assert.equal(dto.job.status, "succeeded");
    assert.ok(dto.report!.total >= 1);
  });
});
