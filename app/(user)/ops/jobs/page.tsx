import type { Metadata } from "next";
import { JobsExplorer } from "@/components/jobs-explorer";
import { consolePagePrincipal } from "@/lib/http/principal";
import { taskCatalog } from "@/lib/jobs/catalog";

export const metadata: Metadata = { title: "Jobs" };

export default async function JobsExplorerPage() {
  const principal = await consolePagePrincipal();
  return (
    <div className="space-y-6">
      <h1 className="text-2xl font-semibold">Jobs</h1>
      <JobsExplorer isAdmin={principal.isPlatformAdmin} types={Object.keys(taskCatalog)} />
    </div>
  );
}
