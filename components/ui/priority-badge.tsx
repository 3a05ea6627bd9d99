import type { PriorityName } from "@/lib/jobs/priority-names";

const tones: Record<Exclude<PriorityName, "normal">, string> = {
  high: "border-amber-300 bg-amber-50 text-amber-900",
  low: "border-slate-300 bg-white text-slate-600",
};

/**
 * A job's priority where it is not the usual one: "high priority" or "low priority" (a normal
 * job shows nothing, so lists stay narrow on a phone).
 */
export function PriorityBadge({ priority }: { priority: PriorityName }) {
  if (priority === "normal") return null;
  return (
    <span
      data-testid="job-priority"
      className={`inline-block whitespace-nowrap rounded border px-1.5 py-0.5 text-xs font-medium ${tones[priority]}`}
    >
      {priority} priority
    </span>
  );
}
