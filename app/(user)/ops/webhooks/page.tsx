import type { Metadata } from "next";
import { WebhookList } from "@/components/webhook-list";
import { consolePagePrincipal } from "@/lib/http/principal";

export const metadata: Metadata = { title: "Webhooks" };

export default async function ConsoleWebhooksPage() {
  const principal = await consolePagePrincipal();
  return (
    <div className="space-y-6">
      <div>
        <h1 className="text-2xl font-semibold">Webhooks</h1>
        <p className="text-sm text-slate-600">
          {principal.isPlatformAdmin
            ? "Every tenant's webhook endpoints and their health: success rate, whether each is sending or paused, pending and failed deliveries. Failed deliveries are also under Dead letters."
            : `Every webhook endpoint of ${principal.tenantSlug} and its health: success rate, whether each is sending or paused, pending and failed deliveries. Failed deliveries are also under Dead letters.`}
        </p>
      </div>
      <WebhookList variant="console" isAdmin={principal.isPlatformAdmin} />
    </div>
  );
}
