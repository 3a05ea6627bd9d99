import type { Metadata } from "next";
import { ExportForm } from "@/components/export-form";
import { ExportList } from "@/components/export-list";

export const metadata: Metadata = { title: "Exports" };

/** `?again=<jobId>`: the form opens filled in as that export was ("Request again", from the list or a job's page). */
export default async function ExportsPage({ searchParams }: { searchParams: Promise<{ again?: string | string[] }> }) {
  const { again } = await searchParams;
  const id = typeof again === "string" && again ? again : undefined;
  return (
    <div className="space-y-6">
      <h1 className="text-2xl font-semibold">Exports</h1>
      <ExportForm again={id} />
      <ExportList />
    </div>
  );
}
