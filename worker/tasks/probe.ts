// probe – a sleep and an idempotent side effect (lib/jobs/probe.ts), for chaos and throughput runs
import { probeTask } from "@/lib/jobs/probe";
import { dispatchToRunner } from "./dispatch";

export default dispatchToRunner(probeTask.type);
