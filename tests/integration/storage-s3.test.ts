import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { buffer } from "node:stream/consumers";
import S3rver from "s3rver";
import { pool } from "@/lib/db";
import { resetEnvCache } from "@/lib/env";
import { openExportDownload, requestExport } from "@/lib/exports/service";
import { cleanupExpiredExports } from "@/lib/exports/links";
import type { PartResult } from "@/lib/exports/parts";
import { db } from "@/lib/db";
import { getJob } from "@/lib/jobs/queries";
import { resetStorage, storage } from "@/lib/storage";
import { S3Storage } from "@/lib/storage/s3";
import { useTestDatabase } from "../helpers/db";
import { drainJobs } from "../helpers/fixtures";
import { unzip } from "../helpers/zip";

// A real S3-compatible server in this process (s3rver), an empty bucket, and the
// driver chosen by configuration exactly as in production.
let server: S3rver;
let dir: string;
const S3_VARS = ["STORAGE_DRIVER", "S3_BUCKET", "S3_ENDPOINT", "S3_ACCESS_KEY_ID", "S3_SECRET_ACCESS_KEY"];

const fx = useTestDatabase({
  setup: async () => {
    dir = await mkdtemp(path.join(tmpdir(), "conveyor-s3rver-"));
    server = new S3rver({
      address: "127.0.0.1",
      port: 0,
      silent: true,
      directory: dir,
      configureBuckets: [{ name: "conveyor-test", configs: [] }],
    });
    const { port } = await server.run();
    Object.assign(process.env, {
      STORAGE_DRIVER: "s3",
      S3_BUCKET: "conveyor-test",
      S3_ENDPOINT: `http://127.0.0.1:${port}`,
      S3_ACCESS_KEY_ID: "S3RVER",
      S3_SECRET_ACCESS_KEY: "S3RVER",
    });
    resetEnvCache();
    resetStorage();
  },
});
after(async () => {
  for (const v of S3_VARS) delete process.env[v];
  resetEnvCache();
  resetStorage();
  await server.close();
  await rm(dir, { recursive: true, force: true });
});

describe("the S3 storage driver", () => {
  test("is the configured driver; writes (multipart past 8 MB), reads and deletes objects", async () => {
    assert.ok(storage() instanceof S3Storage);
    const small = await storage().write(
      "t/hello.txt",
      Readable.from([Buffer.from("hello "), Buffer.from("world")]),
      [],
    );
    assert.deepEqual(small, { size: 11, sha256: createHash("sha256").update("hello world").digest("hex") });
    const opened = await storage().open("t/hello.txt");
    assert.equal(opened?.size, 11);
    assert.equal((await buffer(opened!.stream)).toString(), "hello world");

    const big = randomBytes(20 * 1024 * 1024);
    const stored = await storage().write("t/big.bin", Readable.from([big.subarray(0, 7e6), big.subarray(7e6)]), []);
    assert.equal(stored.sha256, createHash("sha256").update(big).digest("hex"));
    const back = await buffer((await storage().open("t/big.bin"))!.stream);
    assert.ok(back.equals(big), "20 MB round trip (three upload parts)");
    // A byte range (an import's chunk of its clean file): both ends inclusive.
    const range = await storage().open("t/big.bin", { start: 9_000_000, end: 9_000_999 });
    assert.equal(range?.size, 1_000);
    assert.ok((await buffer(range!.stream)).equals(big.subarray(9_000_000, 9_001_000)));

    await storage().delete("t/hello.txt");
    assert.equal(await storage().open("t/hello.txt"), null);
    assert.equal(await storage().open("t/never-written"), null);
  });

  test("a split export runs through S3 end to end: parts, zip, download", async () => {
    const { job } = await requestExport(fx.p.ada, {
      dataset: "events",
      format: "csv",
      compression: "gzip",
      partRows: 2500,
    });
    await drainJobs();
    const done = await getJob(fx.p.ada, job.id);
    assert.equal(done.status, "succeeded");
    const entries = await unzip(await buffer((await openExportDownload(fx.p.ada, job.id)).stream));
    const manifest = JSON.parse(entries.get("manifest.json")!.toString()) as { rowCount: number; files: unknown[] };
    const { rows } = await pool().query<{ n: number }>("SELECT count(*)::int AS n FROM events WHERE tenant_id = $1", [
      fx.p.acmeId,
    ]);
    assert.equal(manifest.rowCount, rows[0]!.n);
    assert.equal(manifest.files.length, 4);
    await cleanupExpiredExports();
    const parts = await db().job.findMany({ where: { parentId: job.id } });
    for (const part of parts) {
      assert.equal(await storage().open((part.result as PartResult).key), null, "parts leave the bucket once zipped");
    }
  });
});
