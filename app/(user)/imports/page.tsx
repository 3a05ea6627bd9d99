import type { Metadata } from "next";
import Link from "next/link";
import { ImportForm } from "@/components/import-form";
import { ImportList } from "@/components/import-list";
import { ImportTimeline } from "@/components/import-timeline";
import { Alert } from "@/components/ui/alert";
import { isOperator } from "@/lib/auth/authorize";
import { importStatusOf } from "@/lib/client/imports";
import { sessionPrincipal } from "@/lib/http/principal";

export const metadata: Metadata = { title: "Imports" };

type Params = { id?: string | string[]; new?: string | string[]; status?: string | string[] };

/**
 * The tenant's imports, the list first. `?new=1`: the form to import a file, opened by "New
 * import"; `?id=<jobId>`: that import's stage timeline (the list's rows link here); `?status=`:
 * the list's filter.
 */
export default async function ImportsPage({ searchParams }: { searchParams: Promise<Params> }) {
  const principal = await sessionPrincipal();
  const params = await searchParams;
  const one = (v: string | string[] | undefined) => (typeof v === "string" && v ? v : undefined);
  const selected = one(params.id);
  const creating = one(params.new) === "1";
  const status = importStatusOf(one(params.status));
  if (principal && !principal.tenantId) {
    return (
      <div className="space-y-6">
        <h1 className="text-2xl font-semibold">Imports</h1>
        <Alert tone="neutral">Imports bring a file into a tenant&apos;s data: they need a tenant membership.</Alert>
      </div>
    );
  }
  return (
    <div className="space-y-6">
      <div className="flex flex-wrap items-center justify-between gap-3">
        <h1 className="text-2xl font-semibold">Imports</h1>
        {!creating && (
          <Link
            href="/imports?new=1"
            scroll={false}
            className="rounded border border-indigo-700 bg-indigo-700 px-4 py-2 text-sm font-medium text-white hover:bg-indigo-600"
          >
            New import
          </Link>
        )}
      </div>
      {creating && <ImportForm closeHref={selected ? `/imports?id=${selected}` : "/imports"} />}
      {selected && (
        <ImportTimeline key={selected} id={selected} canOperate={principal ? isOperator(principal) : false} />
      )}
      <ImportList selected={selected} status={status} />
    </div>
  );
}
