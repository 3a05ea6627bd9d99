/** The import workload's job kind: an import, its stages and its load stage's chunks. */
import { capitalize, count, num, numberIn } from "./words";
import type { JobKind, JobLike, ProgressFields, TypeEntry } from "./types";

/** An import request's name: "Events · CSV". */
function requestName(input: unknown): string | null {
  const i = input as { dataset?: unknown; format?: unknown } | null;
  if (!i || typeof i.dataset !== "string") return null;
  return `${capitalize(i.dataset)} · ${i.format === "jsonl" ? "JSON Lines" : "CSV"}`;
}

/**
 * Stages and their details: `scan` ({ rows, columns } once read), `parse`
 * ({ good, bad }), `chunk` ({ chunks }), `load` (a chunk: { chunk, chunks };
 * the stage: { chunks } while they run, { loaded } after), `commit`
 * ({ inserted, updated } once done).
 */
function progress(p: ProgressFields, job: JobLike): string | null {
  const n = (key: string) => numberIn(p.detail, key);
  switch (p.stage) {
    case "scan": {
      const rows = n("rows");
      const columns = n("columns");
      return rows === null || columns === null
        ? "Checking the file"
        : `${count(rows, "row")}, ${count(columns, "column")}`;
    }
    case "parse": {
      const good = n("good");
      const bad = n("bad");
      return good === null || bad === null ? null : `${num(good)} good, ${num(bad)} bad`;
    }
    case "chunk": {
      const chunks = n("chunks");
      return chunks === null ? null : count(chunks, "chunk");
    }
    case "load": {
      const chunk = n("chunk");
      const chunks = n("chunks");
      const loaded = n("loaded");
      if (chunk !== null && chunks !== null) return `Chunk ${chunk} of ${chunks}`;
      if (loaded !== null) return `${count(loaded, "chunk")} loaded`;
      return chunks === null ? null : count(chunks, "chunk");
    }
    case "commit": {
      const inserted = n("inserted");
      const updated = n("updated");
      if (inserted !== null && updated !== null) return `${num(inserted)} inserted, ${num(updated)} updated`;
      const dataset = (job.input as { request?: { dataset?: unknown } } | null)?.request?.dataset;
      return `Moving ${count(p.total ?? 0, "row")} into ${typeof dataset === "string" ? dataset : "the dataset"}`;
    }
    default:
      return null;
  }
}

/** A stage of an import ("Parse · Events · CSV import"). */
const stage = (name: string, extra: Partial<TypeEntry> = {}): TypeEntry => ({
  title: (job) => {
    const request = requestName((job.input as { request?: unknown } | null)?.request);
    return request ? `${capitalize(name)} · ${request} import` : `${capitalize(name)} stage of an import`;
  },
  childOf: "A stage of an import",
  progress,
  ...extra,
});

export const importKind: JobKind = {
  name: "imports",
  list: { href: "/imports", label: "Imports" },
  // Imports write into a tenant's data: members and operators of one.
  nav: [{ href: "/imports", label: "Imports", for: "members", area: "user" }],
  types: {
    import: {
      title: (job) => {
        const name = requestName(job.input);
        return name ? `${name} import` : "Import";
      },
      children: "stages",
      tileLabel: (child) => capitalize(child.type.replace(/^import_/, "")),
      links: (job) => [{ label: "Stages and bad rows", href: `/imports?id=${job.id}` }],
      // An import's one file is its errors file, served by the imports API (not the exports').
      fileHref: (job) => `/api/v1/imports/${job.id}/errors`,
      // Its own progress counts stages (the engine's pipeline words it); its stages word theirs.
    },
    import_scan: stage("scan"),
    import_parse: stage("parse"),
    import_chunk: stage("chunk"),
    import_load: stage("load", { children: "chunks", tileLabel: (_child, i) => `Chunk ${i + 1}` }),
    import_load_chunk: {
      title: (job) => {
        const i = job.input as { dataset?: unknown; chunk?: { n?: number }; chunks?: number } | null;
        const chunk = i?.chunk?.n && i.chunks ? `Chunk ${i.chunk.n} of ${i.chunks}` : "Chunk";
        return typeof i?.dataset === "string" ? `${chunk} · ${capitalize(i.dataset)} import` : `${chunk} of an import`;
      },
      childOf: "A chunk of an import's load stage",
      progress,
    },
    import_commit: stage("commit"),
  },
};
