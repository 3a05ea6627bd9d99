import { test } from "node:test";
import assert from "node:assert/strict";
import { db, pool } from "@/lib/db";
import { enqueueJob } from "@/lib/jobs/enqueue";
import { errorResponse } from "@/lib/http/respond";
import { useTestDatabase } from "../helpers/db";
import { drainJobs } from "../helpers/fixtures";

const fx = useTestDatabase({ seed: 0.001 });

test("a lifecycle-guard refusal (SQLSTATE 23514) during a request answers 409, through Prisma or pg alike", async () => {
  const { job } = await enqueueJob({ tenantId: fx.p.acmeId, type: "probe", input: {} });
  await drainJobs();
  const backwards = [
    () => db().$executeRaw`UPDATE jobs SET status = 'queued' WHERE id = ${job.id}::uuid`,
    () => db().job.update({ where: { id: job.id }, data: { status: "running" } }),
    () => pool().query(`UPDATE jobs SET status = 'retrying' WHERE id = $1`, [job.id]),
  ];
  for (const write of backwards) {
    const err = await write().then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(err, "the guard refused the backward move");
    const res = errorResponse(err);
    assert.equal(res.status, 409);
    const body = (await res.json()) as { error: { code: string; message: string } };
    assert.equal(body.error.code, "conflict");
    assert.doesNotMatch(body.error.message, /job_status|check_violation|cannot move/, "no internals");
  }
  // Anything else unexpected is still a 500 with no internals.
  const other = errorResponse(new Error("connection reset"));
  assert.equal(other.status, 500);
});
