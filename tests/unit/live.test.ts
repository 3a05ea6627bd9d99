import { test } from "node:test";
import assert from "node:assert/strict";
import { createQueryClient } from "@/lib/client/query-client";
import type { JobDto } from "@/lib/jobs/dto";
import { jobKeys } from "@/lib/client/api";

function job(seq: number, status: JobDto["status"]): JobDto {
  return { id: "j1", seq, status, attempts: 2 } as JobDto;
}

test("a job query keeps what the events brought when a fetch begun before them lands after", async () => {
  // The client the browser gets (components/providers.tsx).
  const qc = createQueryClient();
  const key = jobKeys.detail("j1");
  qc.setQueryData(key, job(4, "retrying"));
  // "Retry now" refetches; the job runs and finishes before the answer (read while it waited) comes back.
  let answer!: (j: JobDto) => void;
  const fetching = qc.fetchQuery({
    queryKey: key,
    queryFn: () => new Promise<JobDto>((r) => (answer = r)),
    staleTime: 0, // an invalidated query fetches whatever its age
  });
  qc.setQueryData(key, job(6, "succeeded")); // the stream's terminal snapshot
  answer(job(4, "retrying"));
  await fetching;
  assert.equal(qc.getQueryData<JobDto>(key)?.status, "succeeded");

  // A newer answer, or one as new, is taken.
  await qc.fetchQuery({ queryKey: key, queryFn: async () => job(6, "succeeded"), staleTime: 0 });
  await qc.fetchQuery({ queryKey: key, queryFn: async () => ({ ...job(7, "succeeded"), attempts: 3 }), staleTime: 0 });
  assert.deepEqual(qc.getQueryData(key), { ...job(7, "succeeded"), attempts: 3 });
});
