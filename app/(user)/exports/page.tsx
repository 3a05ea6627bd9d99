import type { Metadata } from "next";
import Link from "next/link";
import { Suspense } from "react";
import { ExportForm } from "@/components/export-form";
import { ExportList } from "@/components/export-list";

export const metadata: Metadata = { title: "Exports" };

type Params = Record<string, string | string[] | undefined>;

/** This page's URL with `change` applied (the list's filters kept). */
function hrefWith(params: Params, change: Record<string, string | null>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (typeof v === "string" && v) q.set(k, v);
  for (const [k, v] of Object.entries(change)) {
    if (v) q.set(k, v);
    else q.delete(k);
  }
  const s = q.toString();
  return s ? `/exports?${s}` : "/exports";
}

/**
 * The list first (filters in the URL: components/export-filters.tsx); the form opens with New export
 * (`?new=1`) or Request again (`?again=<jobId>`: filled in as that export was, from the list or a
 * job's page), and takes the focus when it opens.
 */
export default async function ExportsPage({ searchParams }: { searchParams: Promise<Params> }) {
  const params = await searchParams;
  const again = typeof params.again === "string" && params.again ? params.again : undefined;
  const open = Boolean(again) || params.new === "1";
  const closed = hrefWith(params, { new: null, again: null });
  return (
    <div className="space-y-6">
      <div className="flex flex-wrap items-center justify-between gap-3">
        <h1 className="text-2xl font-semibold">Exports</h1>
        {!open && (
          <Link
            href={hrefWith(params, { new: "1" })}
            scroll={false}
            className="rounded border border-indigo-700 bg-indigo-700 px-4 py-2 text-sm font-medium text-white hover:bg-indigo-600"
          >
            New export
          </Link>
        )}
      </div>
      {open && <ExportForm again={again} closeHref={closed} emptyHref={hrefWith(params, { new: "1", again: null })} />}
      <Suspense fallback={<p className="text-sm text-slate-500">Loading exports…</p>}>
        <ExportList />
      </Suspense>
    </div>
  );
}
