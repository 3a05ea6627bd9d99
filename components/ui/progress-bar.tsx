/** `stopped`: a job that failed or was cancelled keeps its bar where it stopped, greyed, not moving. */
export function ProgressBar({
  percent,
  label,
  tone = "active",
}: {
  percent: number | null;
  label: string;
  tone?: "active" | "failed" | "stopped";
}) {
  const value = percent ?? 0;
  const fill =
    tone === "failed"
      ? "bg-red-300"
      : tone === "stopped"
        ? "bg-slate-400"
        : percent === null
          ? "w-1/3 animate-pulse bg-sky-300"
          : value >= 100
            ? "bg-emerald-500"
            : "bg-sky-500";
  return (
    <div
      role="progressbar"
      aria-label={label}
      aria-valuemin={0}
      aria-valuemax={100}
      aria-valuenow={percent ?? undefined}
      aria-valuetext={percent === null ? (tone === "active" ? "in progress" : "stopped") : `${value}%`}
      className="h-2 w-full overflow-hidden rounded-full bg-slate-200"
    >
      <div
        className={`h-full rounded-full transition-[width] duration-300 ${fill}`}
        style={percent === null && tone === "active" ? undefined : { width: `${value}%` }}
      />
    </div>
  );
}
