export function ProgressBar({ percent, label }: { percent: number | null; label: string }) {
  const value = percent ?? 0;
  return (
    <div
      role="progressbar"
      aria-label={label}
      aria-valuemin={0}
      aria-valuemax={100}
      aria-valuenow={percent ?? undefined}
      aria-valuetext={percent === null ? "in progress" : `${value}%`}
      className="h-2 w-full overflow-hidden rounded-full bg-slate-200"
    >
      <div
        className={`h-full rounded-full transition-[width] duration-300 ${percent === null ? "w-1/3 animate-pulse bg-indigo-300" : value >= 100 ? "bg-emerald-500" : "bg-indigo-500"}`}
        style={percent === null ? undefined : { width: `${value}%` }}
      />
    </div>
  );
}
