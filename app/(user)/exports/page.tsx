import type { Metadata } from "next";
import { ExportForm } from "@/components/export-form";
import { ExportList } from "@/components/export-list";

export const metadata: Metadata = { title: "Exports" };

export default function ExportsPage() {
  return (
    <div className="space-y-6">
      <h1 className="text-2xl font-semibold">Exports</h1>
      <ExportForm />
      <ExportList />
    </div>
  );
}
