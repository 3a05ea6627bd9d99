/** The export workload's job kind: an export and its parts. */
import { capitalize, count, num, numberIn } from "./words";
import type { JobKind, JobLike, ProgressFields } from "./types";

/** An export request's name: "Events · CSV.gz". */
function exportName(input: unknown): string | null {
  const i = input as { dataset?: unknown; format?: unknown; compression?: unknown } | null;
  if (!i || typeof i.dataset !== "string") return null;
  const format = typeof i.format === "string" ? i.format.toUpperCase() : "CSV";
  return `${capitalize(i.dataset)} · ${format}${i.compression === "gzip" ? ".gz" : ""}`;
}

type PartInput = { part?: number; parts?: number; request?: unknown } | null;

/** "events · csv.gz · part 3 of 20": what an export (or a part) reads and writes, from its input. */
function summary(request: unknown, partOf: PartInput = null): string | null {
  if (!request || typeof request !== "object") return null;
  const { dataset, format, compression } = request as Record<string, unknown>;
  if (typeof dataset !== "string") return null;
  const file = typeof format === "string" ? `${format}${compression === "gzip" ? ".gz" : ""}` : null;
  const part =
    typeof partOf?.part === "number" && typeof partOf.parts === "number"
      ? `part ${partOf.part} of ${partOf.parts}`
      : null;
  return [dataset, file, part].filter(Boolean).join(" · ");
}

/**
 * Stages: `exporting`, `parts` (split: detail.parts), `repairing` (a repair: detail.parts to run
 * again, detail.adopted kept), `assembling` (detail.done of detail.parts), `done`.
 */
function progress(p: ProgressFields, job: JobLike): string | null {
  switch (p.stage) {
    case "exporting":
    case "done": {
      const i = job.input as { dataset?: unknown; part?: number; parts?: number } | null;
      if (job.type === "export_part") return i?.part && i.parts ? `Part ${i.part} of ${i.parts}` : "Exporting";
      if (p.stage === "done") return count(p.done, "row");
      return typeof i?.dataset === "string" ? `Exporting ${i.dataset}` : "Exporting";
    }
    case "parts": {
      const parts = numberIn(p.detail, "parts");
      return parts === null ? "Split into parts" : `Split into ${count(parts, "part")}`;
    }
    case "repairing": {
      const parts = numberIn(p.detail, "parts");
      const adopted = numberIn(p.detail, "adopted");
      if (parts === null) return "Repairing";
      return `Repairing: ${count(parts, "dead part")} to run again${adopted === null ? "" : `, ${num(adopted)} finished kept`}`;
    }
    case "assembling": {
      const done = numberIn(p.detail, "done");
      const parts = numberIn(p.detail, "parts");
      return done === null || parts === null ? "Assembling" : `Assembling ${done} of ${parts} parts`;
    }
    default:
      return null;
  }
}

export const exportKind: JobKind = {
  name: "exports",
  list: { href: "/exports", label: "Exports" },
  nav: [{ href: "/exports", label: "Exports", for: "everyone", area: "user" }],
  types: {
    export: {
      title: (job) => {
        const name = exportName(job.input);
        return name ? `${name} export` : "Export";
      },
      children: "parts",
      // Its part number, not its place: a repair runs only some of the parts again.
      tileLabel: (child, i) => {
        const part = (child.input as PartInput)?.part;
        return `Part ${typeof part === "number" ? part : i + 1}`;
      },
      links: (job) => [{ label: "Request again", href: `/exports?again=${job.id}` }],
      shareLinks: true,
      summary: (job) => summary(job.input),
      progress,
      // A split export's replay reruns only the parts that did not finish (lib/exports/repair.ts).
      replayLabel: (job) => {
        const c = job.progress.children;
        if (!c || c.total === 0) return null;
        const dead = c.total - c.done;
        return dead > 0 ? `Repair ${count(dead, "dead part")}` : "Repair the archive";
      },
    },
    export_part: {
      title: (job) => {
        const i = job.input as PartInput;
        const name = exportName(i?.request);
        const part = i?.part && i.parts ? `Part ${i.part} of ${i.parts}` : "Part";
        return name ? `${part} · ${name} export` : `${part} of an export`;
      },
      childOf: "Part of a split export",
      summary: (job) => summary((job.input as PartInput)?.request, job.input as PartInput),
      progress,
      // A dead part is replayed through its export, which reruns only its dead parts.
      replayLabel: () => "Repair its export",
    },
  },
};
