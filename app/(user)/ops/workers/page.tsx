import type { Metadata } from "next";
import { WorkersPanel } from "@/components/workers-panel";
import { consolePagePrincipal } from "@/lib/http/principal";

export const metadata: Metadata = { title: "Workers" };

export default async function WorkersPage() {
  await consolePagePrincipal(true);
  return (
    <div className="space-y-6">
      <div>
        <h1 className="text-2xl font-semibold">Workers</h1>
        <p className="text-sm text-slate-600">
          The fleet, from the worker registry: each pool with its restarts, then the live workers, then those that
          stopped or died.
        </p>
      </div>
      <WorkersPanel />
    </div>
  );
}
