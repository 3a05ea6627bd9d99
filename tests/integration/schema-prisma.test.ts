import { test } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { pullSchema } from "../../scripts/db-pull";
import { useTestDatabase } from "../helpers/db";

const fx = useTestDatabase({ seed: false });

test("prisma/schema.prisma is what `prisma db pull` makes of the migrated database (run `npm run db:pull`)", async () => {
  const pulled = await pullSchema(fx.database.url);
  const committed = await readFile("prisma/schema.prisma", "utf8");
  assert.equal(committed, pulled, "prisma/schema.prisma is stale: run `npm run db:pull`, then `npx prisma generate`");
  // Every table is a model: the job table and a workload's table both are there.
  assert.match(pulled, /@@map\("jobs"\)/);
  assert.match(pulled, /@@map\("schedule_runs"\)/);
});
