import type { Metadata } from "next";
import Link from "next/link";
import { redirect } from "next/navigation";
import { WebhookList } from "@/components/webhook-list";
import { sessionPrincipal } from "@/lib/http/principal";

export const metadata: Metadata = { title: "Webhooks" };

export default async function WebhooksPage() {
  const principal = await sessionPrincipal();
  if (!principal) redirect("/login");
  return (
    <div className="space-y-6">
      <div>
        <p className="text-sm">
          <Link href="/settings" className="text-indigo-700 underline">
            Settings
          </Link>
        </p>
        <h1 className="text-2xl font-semibold">Webhooks</h1>
        <p className="text-sm text-slate-600">
          Conveyor calls your URLs when an export is ready or a job ends. Each request is signed with the
          endpoint&apos;s secret (<code>webhook-signature</code>) and retried on a schedule when it fails; a delivery
          whose every request failed is <strong>failed</strong>: open it from its endpoint&apos;s failed count, see the
          answers, and replay it once your endpoint is fixed.
        </p>
        {!principal.tenantId && (
          <p className="mt-2 text-sm text-slate-600">
            An endpoint belongs to a tenant: platform admins see every tenant&apos;s here and add none.
          </p>
        )}
      </div>
      <WebhookList isAdmin={principal.isPlatformAdmin} canAdd={principal.tenantId !== null} />
    </div>
  );
}
