/**
 * The jobs explorer's filters as its URL holds them, as the API takes them and
 * as its form shows them (dates in the viewer's zone; link-only filters as chips).
 */
import { opsJobFilterKeys, type OpsJobFilters } from "@/lib/client/api";
import { formatTime, localMidnight } from "@/lib/client/format";
import { type Draft } from "./job-filter-form";

// ── The URL ──────────────────────────────────────────────────────────────────
//
// The explorer's filters live in its URL, in the page's words:
//   /ops/jobs?status=&type=&queue=&tenant=&q=&from=&to=&errorClass=&fingerprint=&dead=1&children=1
// `from` and `to` are dates (YYYY-MM-DD) in the browser's time zone: jobs created from the start of
// `from` to the end of `to`. An ISO instant there is passed on as it is. The other keys are the API's
// (docs/API.md, GET /api/v1/ops/jobs).

export const DATE = /^\d{4}-\d{2}-\d{2}$/;

/** The filters a URL's query names (empty values dropped). */
export function filtersFromSearch(params: URLSearchParams): OpsJobFilters {
  const out: OpsJobFilters = {};
  for (const k of opsJobFilterKeys) {
    const v = params.get(k)?.trim();
    if (v) out[k] = v;
  }
  return out;
}

/**
 * The URL's filters as the API takes them: a date `from` is the local midnight it starts with, a
 * date `to` the local midnight after it (the day is included). Anything else goes as it is, for the
 * API to check (and refuse naming the field).
 */
export function apiFilters(url: OpsJobFilters): OpsJobFilters {
  const out = { ...url };
  for (const [k, days] of [
    ["from", 0],
    ["to", 1],
  ] as const) {
    const v = url[k];
    const at = v && DATE.test(v) ? localMidnight(v, days) : null;
    if (at) out[k] = at.toISOString();
  }
  return out;
}

/** The form's fields; `from`/`to` empty when the URL holds something other than a date (shown as a chip). */

export function draftOf(f: OpsJobFilters): Draft {
  return {
    status: f.status ?? "",
    type: f.type ?? "",
    queue: f.queue ?? "",
    tenant: f.tenant ?? "",
    q: f.q ?? "",
    from: f.from && DATE.test(f.from) ? f.from : "",
    to: f.to && DATE.test(f.to) ? f.to : "",
    children: f.children === "1",
  };
}

/** Filters only a link sets (from the dead-letters page, say), shown as removable chips. */
export const CHIPS: {
  key: keyof OpsJobFilters;
  /** `zone`: the reader's (useDisplayZone), null before hydration. */
  label: (v: string, zone: string | null) => string;
  shown?: (v: string) => boolean;
}[] = [
  { key: "errorClass", label: (v) => `Error class: ${v}` },
  { key: "fingerprint", label: (v) => `Fingerprint: ${v}` },
  { key: "dead", label: () => "Dead letters only (not replayed or discarded)", shown: (v) => v === "1" },
  { key: "from", label: (v, zone) => `Created from ${zone ? formatTime(v, zone) : v}`, shown: (v) => !DATE.test(v) },
  { key: "to", label: (v, zone) => `Created before ${zone ? formatTime(v, zone) : v}`, shown: (v) => !DATE.test(v) },
];
