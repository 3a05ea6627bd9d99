import type { Metadata } from "next";
import { JobsExplorer } from "@/components/jobs-explorer";
import { consolePagePrincipal } from "@/lib/http/principal";
import { taskDefinitions } from "@/lib/jobs/registry";

export const metadata: Metadata = { title: "Jobs" };

const FROM_URL = ["status", "type", "queue", "tenant", "q"] as const;

export default async function JobsExplorerPage({
  searchParams,
}: {
  searchParams: Promise<Record<string, string | string[] | undefined>>;
}) {
  const principal = await consolePagePrincipal();
  const params = await searchParams;
  const initial = Object.fromEntries(
    FROM_URL.flatMap((k) => (typeof params[k] === "string" && params[k] ? [[k, params[k]]] : [])),
  );
  return (
    <div className="space-y-6">
      <h1 className="text-2xl font-semibold">Jobs</h1>
      <JobsExplorer
        isAdmin={principal.isPlatformAdmin}
        types={taskDefinitions().map((d) => d.type)}
        initial={initial}
        // A link to other filters (from the overview, say) starts the explorer afresh.
        key={JSON.stringify(initial)}
      />
    </div>
  );
}
