import type { Metadata } from "next";
import { ImportForm } from "@/components/import-form";
import { ImportList } from "@/components/import-list";
import { ImportTimeline } from "@/components/import-timeline";
import { Alert } from "@/components/ui/alert";
import { sessionPrincipal } from "@/lib/http/principal";

export const metadata: Metadata = { title: "Imports" };

/** `?id=<jobId>`: that import's stage timeline, between the form and the list (the list's rows link here). */
export default async function ImportsPage({ searchParams }: { searchParams: Promise<{ id?: string | string[] }> }) {
  const principal = await sessionPrincipal();
  const { id } = await searchParams;
  const selected = typeof id === "string" && id ? id : undefined;
  return (
    <div className="space-y-6">
      <h1 className="text-2xl font-semibold">Imports</h1>
      {principal && !principal.tenantId ? (
        <Alert tone="neutral">Imports bring a file into a tenant&apos;s data: they need a tenant membership.</Alert>
      ) : (
        <>
          <ImportForm />
          {selected && <ImportTimeline key={selected} id={selected} />}
          <ImportList selected={selected} />
        </>
      )}
    </div>
  );
}
