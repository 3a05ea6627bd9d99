import type { JobDto } from "@/lib/client/api";
import { failureCause, failureWords } from "@/lib/client/failures";

/**
 * A job's failure in two layers (lib/client/failures.ts): the plain sentence and what to do for
 * whoever asked for it; the technical cause under "Technical details", open for operators.
 * `extra`: what the workload adds ("Nothing was written to the table.").
 */
export function FailureText({
  error,
  final,
  canOperate,
  extra,
}: {
  error: NonNullable<JobDto["error"]>;
  final: boolean;
  canOperate: boolean;
  extra?: string;
}) {
  const words = failureWords(error.class, final);
  return (
    <div className="space-y-1" data-whose={words.whose}>
      <p data-testid="failure-summary">
        {words.summary}
        {extra ? ` ${extra}` : ""}
      </p>
      <p data-testid="failure-next">{words.next}</p>
      <details open={canOperate} className="text-sm">
        <summary className="cursor-pointer">Technical details{canOperate ? "" : " (for operators)"}</summary>
        <pre className="mt-1 text-sm whitespace-pre-wrap break-words" data-testid="failure-cause">
          {failureCause(error)}
        </pre>
      </details>
    </div>
  );
}
