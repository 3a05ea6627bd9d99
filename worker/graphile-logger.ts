/**
 * graphile-worker's own log lines (connecting, fetching, its per-job lines)
 * into the process's log: its levels mapped to pino's, its scope as fields.
 */
import { Logger, type LogFunctionFactory } from "graphile-worker";
import type { Logger as PinoLogger } from "@/lib/log";

const levels = { error: "error", warning: "warn", info: "info", debug: "debug" } as const;

/** A graphile-worker Logger writing through `log` (whose bindings, such as `workerId`, every line keeps). */
export function graphileLogger(log: PinoLogger): Logger {
  const factory: LogFunctionFactory = (scope) => {
    // graphile's job id is its own queue row's, not Conveyor's job id: a field of its own.
    const fields = {
      component: "graphile-worker",
      ...(scope.label ? { label: scope.label } : {}),
      ...(scope.workerId ? { graphileWorkerId: scope.workerId } : {}),
      ...(scope.taskIdentifier ? { taskIdentifier: scope.taskIdentifier } : {}),
      ...(scope.jobId ? { graphileJobId: scope.jobId } : {}),
    };
    return (level, message) => {
      // Its per-job info lines ("Completed task 42 (bulk:export, 538 ms) with success") repeat the
      // runner's own line about the attempt, which has the job's fields: debug. (Its meta, which
      // holds the job row and its payload, is never logged.)
      const perJob = level === "info" && (scope.jobId || /^Completed task /.test(message));
      // Its advice to size the pool by the concurrency assumes a job holds a connection while it
      // runs; ours do not (docs/ARCHITECTURE.md, "Concurrency"): the webhooks pool's 1,024 attempts
      // share a few connections by design.
      const poolAdvice = level === "warning" && /maxPoolSize .* smaller than concurrency/.test(message);
      const pinoLevel = perJob || poolAdvice ? "debug" : (levels[level] ?? "info");
      log[pinoLevel](fields, `[graphile-worker] ${message}`);
    };
  };
  return new Logger(factory);
}
