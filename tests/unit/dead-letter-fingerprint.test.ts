import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fingerprintSql, maskErrorMessage } from "@/lib/jobs/fingerprint";

test("one crash on different workers, ids, hosts and durations has one fingerprint", () => {
  const same = (a: string, b: string) => assert.equal(maskErrorMessage(a), maskErrorMessage(b), `${a} ≠ ${b}`);
  same("worker vm:31405:1fd691 stopped renewing its lease", "worker vm:2207:0c9e1a stopped renewing its lease");
  same("worker ip-10-0-3-7.ec2.internal:88:abc123 died", "worker web-2:1:ffffff died");
  same(
    "timeout after 3012 ms calling job 01a22741-eb5c-7699-98f5-100b9b6722d7",
    "timeout after 2.5s calling job 01a22741-eb5c-7699-98f5-100b9b672200",
  );
  same("message 01HZX3Y4K5M6N7P8Q9R0S1T2V3 refused", "message 01JB00000000000000000000ZZ refused");
  same("connect ECONNREFUSED 10.0.0.5:5432", "connect ECONNREFUSED 10.0.9.17:6543");
  same("POST http://127.0.0.1:45123/hook failed", "POST http://hooks.example.com:8443/hook failed");
  same("retried for 5 minutes", "retried for 2 hours");
  same("object 9f86d081884c7d65 is missing", "object 2c26b46b68ffc68f is missing");
  same("HTTP 500; gave up after 8 requests", "HTTP 503; gave up after 8 requests");
});

test("what tells causes apart stays", () => {
  assert.equal(
    maskErrorMessage("worker vm:31405:1fd691 stopped renewing its lease"),
    "worker <worker> stopped renewing its lease",
  );
  assert.equal(maskErrorMessage("connect ECONNREFUSED 10.0.0.5:5432"), "connect ECONNREFUSED <host>");
  assert.equal(
    maskErrorMessage("Line 3: customer_id 42 is not a customer"),
    "Line <n>: customer_id <n> is not a customer",
  );
  assert.equal(maskErrorMessage("timed out after 3012 ms on row 7"), "timed out after <duration> on row <n>");
  // Words that merely start like a unit are words: "8 messages" is a number and a word, not 8 minutes.
  assert.equal(maskErrorMessage("lost 8 messages"), "lost <n> messages");
  assert.notEqual(maskErrorMessage("disk full"), maskErrorMessage("permission denied"));
  assert.equal(maskErrorMessage("x".repeat(600)).length, 500);
});

test("the migration that makes the column uses exactly these rules", () => {
  const dir = path.join(process.cwd(), "prisma/migrations");
  const latest = readdirSync(dir)
    .sort()
    .map((f) => path.join(dir, f, "migration.sql"))
    .filter((f) => {
      try {
        return /ADD COLUMN "error_fingerprint"/.test(readFileSync(f, "utf8"));
      } catch {
        return false;
      }
    })
    .at(-1);
  assert.ok(latest, "a migration adds jobs.error_fingerprint");
  assert.ok(
    readFileSync(latest, "utf8").includes(fingerprintSql('"error_message"')),
    `${latest} does not hold fingerprintSql('"error_message"'): add a migration that makes the column again`,
  );
});
