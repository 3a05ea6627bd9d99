const styles: Record<string, string> = {
  scheduled: "bg-slate-100 text-slate-700",
  queued: "bg-slate-100 text-slate-700",
  running: "bg-indigo-100 text-indigo-800",
  retrying: "bg-amber-100 text-amber-800",
  succeeded: "bg-emerald-100 text-emerald-800",
  failed: "bg-red-100 text-red-800",
  cancelled: "bg-slate-200 text-slate-600",
  expired: "bg-slate-200 text-slate-600",
};

export function StatusBadge({ status, testId = "job-status" }: { status: string; testId?: string }) {
  return (
    <span
      data-testid={testId}
      className={`inline-block rounded px-2 py-0.5 text-xs font-medium ${styles[status] ?? styles.queued}`}
    >
      {status}
    </span>
  );
}
