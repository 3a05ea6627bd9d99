import type { Metadata } from "next";
import { QueuesPanel } from "@/components/queues-panel";
import { taskDefinitions } from "@/lib/jobs/registry";
import { consolePagePrincipal } from "@/lib/http/principal";

export const metadata: Metadata = { title: "Queues" };

export default async function QueuesPage() {
  const principal = await consolePagePrincipal();
  return (
    <div className="space-y-6">
      <div>
        <h1 className="text-2xl font-semibold">Queues</h1>
        <p className="text-sm text-slate-600">
          {principal.isPlatformAdmin
            ? "Every tenant's work. A pause stops new starts within a second; waiting jobs keep their order."
            : `${principal.tenantSlug}'s work. A pause stops new starts of your tenant's jobs; waiting jobs keep their order.`}
        </p>
      </div>
      <QueuesPanel
        isAdmin={principal.isPlatformAdmin}
        tenantSlug={principal.isPlatformAdmin ? null : principal.tenantSlug}
        types={taskDefinitions().map((d) => d.type)}
      />
    </div>
  );
}
