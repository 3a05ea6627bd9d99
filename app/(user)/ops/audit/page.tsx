import type { Metadata } from "next";
import { AuditPanel } from "@/components/console-panels";
import { consolePagePrincipal } from "@/lib/http/principal";

export const metadata: Metadata = { title: "Audit log" };

export default async function AuditPage() {
  const principal = await consolePagePrincipal();
  return (
    <div className="space-y-6">
      <div>
        <h1 className="text-2xl font-semibold">Audit log</h1>
        <p className="text-sm text-slate-600">Every operator action: who, when, what, on which records.</p>
      </div>
      <AuditPanel isAdmin={principal.isPlatformAdmin} />
    </div>
  );
}
