import type { Metadata } from "next";
import { notFound, redirect } from "next/navigation";
import { WebhookDetail } from "@/components/webhook-detail";
import { AppError } from "@/lib/errors";
import { sessionPrincipal } from "@/lib/http/principal";
import { getEndpoint } from "@/lib/webhooks/service";

export const metadata: Metadata = { title: "Webhook endpoint" };

export default async function WebhookEndpointPage({ params }: { params: Promise<{ id: string }> }) {
  const principal = await sessionPrincipal();
  if (!principal) redirect("/login");
  const { id } = await params;
  try {
    // Another tenant's endpoint is not found: the page says so before any of it loads.
    await getEndpoint(principal, id);
  } catch (err) {
    if (err instanceof AppError && err.code === "not_found") notFound();
    throw err;
  }
  return <WebhookDetail id={id} />;
}
