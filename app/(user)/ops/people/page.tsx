import type { Metadata } from "next";
import { PeoplePanel } from "@/components/people-panel";
import { consolePagePrincipal } from "@/lib/http/principal";

export const metadata: Metadata = { title: "People" };

export default async function PeoplePage() {
  const principal = await consolePagePrincipal();
  return (
    <div className="space-y-6">
      <div>
        <h1 className="text-2xl font-semibold">People</h1>
        <p className="text-sm text-slate-600">
          {principal.isPlatformAdmin
            ? "Every tenant's members and invitations; create tenants and invite platform admins."
            : `Who belongs to ${principal.tenantSlug}, and who is invited. Every change is in the audit log.`}
        </p>
      </div>
      <PeoplePanel isAdmin={principal.isPlatformAdmin} ownTenant={principal.tenantSlug} />
    </div>
  );
}
