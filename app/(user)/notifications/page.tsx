import type { Metadata } from "next";
import { redirect } from "next/navigation";
import { NotificationPreferences, NotificationsList } from "@/components/notifications-panel";
import { Alert } from "@/components/ui/alert";
import { sessionPrincipal } from "@/lib/http/principal";

export const metadata: Metadata = { title: "Notifications" };

export default async function NotificationsPage() {
  const principal = await sessionPrincipal();
  if (!principal) redirect("/login");
  if (!principal.tenantId) {
    return (
      <div className="space-y-4">
        <h1 className="text-2xl font-semibold">Notifications</h1>
        <Alert tone="info">Notifications are about a tenant&apos;s jobs: they need a tenant membership.</Alert>
      </div>
    );
  }
  return (
    <div className="space-y-8">
      <div className="space-y-1">
        <h1 className="text-2xl font-semibold">Notifications</h1>
        <p className="text-sm text-slate-600">
          When an export, import or scheduled run of yours finishes or fails, it shows here and on the bell, and — if
          you want — by e-mail.
        </p>
      </div>
      <section aria-labelledby="list-heading" className="space-y-3">
        <h2 id="list-heading" className="text-xl font-semibold">
          Your notifications
        </h2>
        <NotificationsList />
      </section>
      <section aria-labelledby="email-heading" className="space-y-3">
        <h2 id="email-heading" className="text-xl font-semibold">
          E-mail
        </h2>
        <p className="text-sm text-slate-600">
          E-mail me when… (every mail also has a link that turns its kind off without signing in)
        </p>
        <NotificationPreferences />
      </section>
    </div>
  );
}
