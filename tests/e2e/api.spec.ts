import type { APIRequestContext } from "@playwright/test";
import { expect, test } from "./fixtures";
import { cliToken, sqlCount } from "./helpers";

let ada: APIRequestContext;
let gus: APIRequestContext;

test.beforeAll(async ({ playwright }) => {
  const baseURL = test.info().project.use.baseURL;
  ada = await playwright.request.newContext({
    baseURL,
    extraHTTPHeaders: { Authorization: `Bearer ${cliToken("ada@acme.test")}` },
  });
  gus = await playwright.request.newContext({
    baseURL,
    extraHTTPHeaders: { Authorization: `Bearer ${cliToken("gus@globex.test")}` },
  });
});
test.afterAll(async () => {
  await ada.dispose();
  await gus.dispose();
});

async function waitForStatus(ctx: APIRequestContext, id: string, status: string): Promise<Record<string, unknown>> {
  let job: Record<string, unknown> = {};
  await expect
    .poll(
      async () => {
        job = (await (await ctx.get(`/api/v1/jobs/${id}`)).json()) as Record<string, unknown>;
        return job.status;
      },
      { timeout: 60_000 },
    )
    .toBe(status);
  return job;
}

test("POST /api/v1/exports answers 202 with the job and its Location, then the job finishes with a file", async () => {
  const res = await ada.post("/api/v1/exports", {
    data: { dataset: "customers", format: "jsonl", compression: "gzip" },
  });
  expect(res.status()).toBe(202);
  const job = (await res.json()) as { id: string; status: string; type: string };
  expect(res.headers()["location"]).toBe(`/api/v1/jobs/${job.id}`);
  expect(job).toMatchObject({ type: "export", status: "queued" });
  const done = (await waitForStatus(ada, job.id, "succeeded")) as {
    progress: { done: number; total: number; unit: string };
    result: {
      files: { name: string; size: number; sha256: string; downloadUrl: string; expiresAt: string; rows: number }[];
    };
  };
  const n = await sqlCount(
    "SELECT count(*) AS n FROM customers c JOIN tenants t ON t.id = c.tenant_id WHERE t.slug = 'acme'",
  );
  expect(done.progress).toMatchObject({ done: Number(n), total: Number(n), unit: "rows" });
  const file = done.result.files[0]!;
  expect(file.rows).toBe(Number(n));
  expect(file.sha256).toMatch(/^[0-9a-f]{64}$/);
  expect(new Date(file.expiresAt).getTime()).toBeGreaterThan(Date.now() + 6 * 86_400_000);
  const dl = await ada.get(file.downloadUrl);
  expect(dl.status()).toBe(200);
  expect(dl.headers()["content-disposition"]).toBe(
    `attachment; filename="${file.name}"; filename*=UTF-8''${file.name}`,
  );
  expect(dl.headers()["content-type"]).toBe("application/gzip");
  expect((await dl.body()).length).toBe(file.size);
});

test("bad input is a 400 naming each failing field; malformed JSON is a 400 too", async () => {
  const res = await ada.post("/api/v1/exports", {
    data: { dataset: "invoices", format: "xml", compression: "zip", filter: { from: "soon" } },
  });
  expect(res.status()).toBe(400);
  const body = (await res.json()) as { error: { code: string; fields: { path: string }[] } };
  expect(body.error.code).toBe("invalid_input");
  expect(body.error.fields.map((f) => f.path).sort()).toEqual(["compression", "dataset", "filter.from", "format"]);
  const malformed = await ada.post("/api/v1/exports", {
    headers: { "Content-Type": "application/json" },
    data: "{not json",
  });
  expect(malformed.status()).toBe(400);
  const badLimit = await ada.get("/api/v1/jobs?limit=0&status=done");
  expect(badLimit.status()).toBe(400);
  expect(
    ((await badLimit.json()) as { error: { fields: { path: string }[] } }).error.fields.map((f) => f.path).sort(),
  ).toEqual(["limit", "status"]);
});

test("no credentials or a bad token is a 401", async ({ playwright }) => {
  const anon = await playwright.request.newContext({ baseURL: test.info().project.use.baseURL });
  expect((await anon.post("/api/v1/exports", { data: { dataset: "orders" } })).status()).toBe(401);
  expect((await anon.get("/api/v1/jobs")).status()).toBe(401);
  expect((await anon.get("/api/v1/jobs", { headers: { Authorization: "Bearer cvy_nope" } })).status()).toBe(401);
  await anon.dispose();
});

test("Idempotency-Key: the same body returns the same job; another body is a 409", async () => {
  const key = `e2e-${Date.now()}`;
  const a = await ada.post("/api/v1/exports", {
    headers: { "Idempotency-Key": key },
    data: { dataset: "orders", format: "csv" },
  });
  const b = await ada.post("/api/v1/exports", {
    headers: { "Idempotency-Key": key },
    data: { format: "csv", dataset: "orders" },
  });
  expect(a.status()).toBe(202);
  expect(b.status()).toBe(202);
  expect(((await b.json()) as { id: string }).id).toBe(((await a.json()) as { id: string }).id);
  expect(b.headers()["idempotent-replayed"]).toBe("true");
  const c = await ada.post("/api/v1/exports", { headers: { "Idempotency-Key": key }, data: { dataset: "events" } });
  expect(c.status()).toBe(409);
});

test("another tenant's job is a 404 on every route", async () => {
  const { id } = (await (await ada.post("/api/v1/exports", { data: { dataset: "customers" } })).json()) as {
    id: string;
  };
  await waitForStatus(ada, id, "succeeded");
  for (const url of [`/api/v1/jobs/${id}`, `/api/v1/jobs/${id}/events`, `/api/v1/exports/${id}/download`]) {
    expect((await gus.get(url)).status(), url).toBe(404);
  }
  expect((await gus.get(`/api/v1/jobs/not-a-uuid`)).status()).toBe(404);
  const gusJobs = (await (await gus.get("/api/v1/jobs?limit=100")).json()) as { jobs: { id: string }[] };
  expect(gusJobs.jobs.map((j) => j.id)).not.toContain(id);
});

test("the events stream starts with a snapshot and ends after the terminal status", async () => {
  const { id } = (await (await ada.post("/api/v1/exports", { data: { dataset: "orders" } })).json()) as { id: string };
  const res = await ada.get(`/api/v1/jobs/${id}/events`, { timeout: 60_000 });
  expect(res.status()).toBe(200);
  expect(res.headers()["content-type"]).toContain("text/event-stream");
  const text = await res.text(); // completes because the server closes the stream after the terminal snapshot
  const events = [...text.matchAll(/^event: (\w+)$/gm)].map((m) => m[1]);
  expect(events[0]).toBe("snapshot");
  expect(events.at(-1)).toBe("snapshot");
  expect(text).toContain('"status":"succeeded"');
});

test("GET /api/v1/jobs pages newest first with a cursor", async () => {
  const first = (await (await ada.get("/api/v1/jobs?limit=2&type=export")).json()) as {
    jobs: { id: string; createdAt: string }[];
    nextCursor: string;
  };
  expect(first.jobs).toHaveLength(2);
  expect(first.nextCursor).toBeTruthy();
  const second = (await (await ada.get(`/api/v1/jobs?limit=2&type=export&cursor=${first.nextCursor}`)).json()) as {
    jobs: { id: string; createdAt: string }[];
  };
  expect(second.jobs.length).toBeGreaterThan(0);
  expect(new Set([...first.jobs, ...second.jobs].map((j) => j.id)).size).toBe(first.jobs.length + second.jobs.length);
  expect(new Date(first.jobs[1]!.createdAt) >= new Date(second.jobs[0]!.createdAt)).toBe(true);
});

test("50 concurrent identical POSTs with one Idempotency-Key create one job, and every answer carries its id", async () => {
  const key = `burst-${Date.now()}`;
  const answers = await Promise.all(
    Array.from({ length: 50 }, () =>
      ada.post("/api/v1/exports", {
        headers: { "Idempotency-Key": key },
        data: { dataset: "customers", format: "jsonl" },
      }),
    ),
  );
  expect(answers.map((a) => a.status())).toEqual(Array(50).fill(202));
  const ids = new Set(await Promise.all(answers.map(async (a) => ((await a.json()) as { id: string }).id)));
  expect(ids.size).toBe(1);
  expect(await sqlCount("SELECT count(*) AS n FROM jobs WHERE idempotency_key = $1", [key])).toBe(1);
});

test("cancel answers 409 for a finished job and 404 across tenants; replay is for operators", async () => {
  const { id } = (await (await ada.post("/api/v1/exports", { data: { dataset: "customers" } })).json()) as {
    id: string;
  };
  await waitForStatus(ada, id, "succeeded");
  expect((await ada.post(`/api/v1/jobs/${id}/cancel`)).status()).toBe(409);
  expect((await gus.post(`/api/v1/jobs/${id}/cancel`)).status()).toBe(404);
  expect((await ada.post(`/api/v1/jobs/${id}/replay`)).status()).toBe(403);
  expect((await ada.get(`/api/v1/dead-letters`)).status()).toBe(403);
  const history = (await (await ada.get(`/api/v1/jobs/${id}/history`)).json()) as {
    attempts: { outcome: string }[];
    transitions: { to: string }[];
  };
  expect(history.attempts.map((a) => a.outcome)).toEqual(["succeeded"]);
  expect(history.transitions.map((t) => t.to)).toEqual(["queued", "running", "succeeded"]);
});
