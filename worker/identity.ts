import { makeWorkerId } from "@/lib/jobs/runner";

/** This process's worker id. */
export const workerIdentity = { id: makeWorkerId() };
