import { makeWorkerId } from "@/lib/jobs/workers";

/** This process's worker id. */
export const workerIdentity = { id: makeWorkerId() };
