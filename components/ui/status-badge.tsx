import { stateLabel, stateMeaning, statusBadgeClass } from "@/lib/client/status";

/**
 * A job's (or a worker's, a queue's) status, in the one palette and the one vocabulary of
 * lib/client/status.ts: its word is `stateLabel(status)`, its title what that state means.
 */
export function StatusBadge({
  status,
  label,
  testId = "job-status",
  title,
}: {
  status: string;
  /** Shown instead of the status itself (the colour still follows the status). */
  label?: string;
  testId?: string;
  title?: string;
}) {
  return (
    <span
      data-testid={testId}
      title={title ?? stateMeaning(status)}
      className={`inline-block whitespace-nowrap rounded px-2 py-0.5 text-xs font-medium ${statusBadgeClass(status)}`}
    >
      {label ?? stateLabel(status)}
    </span>
  );
}
