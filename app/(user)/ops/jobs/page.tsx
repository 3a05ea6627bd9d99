import type { Metadata } from "next";
import { JobsExplorer } from "@/components/jobs-explorer";
import { consolePagePrincipal } from "@/lib/http/principal";
import { taskDefinitions } from "@/lib/jobs/registry";

export const metadata: Metadata = { title: "Jobs" };

/**
 * The jobs explorer. Its filters live in the URL (?status=&type=&queue=&tenant=&q=&from=&to=
 * &errorClass=&fingerprint=&dead=1&children=1): the explorer reads them (on the server's render too)
 * and writes them, so a link, a reload and Back all show the same filters and jobs.
 */
export default async function JobsExplorerPage() {
  const principal = await consolePagePrincipal();
  return (
    <div className="space-y-6">
      <h1 className="text-2xl font-semibold">Jobs</h1>
      <JobsExplorer isAdmin={principal.isPlatformAdmin} types={taskDefinitions().map((d) => d.type)} />
    </div>
  );
}
