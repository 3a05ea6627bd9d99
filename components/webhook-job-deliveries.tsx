"use client";

import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { deliveriesHref, fetchJobDeliveries, webhookKeys } from "@/lib/client/webhooks";
import { Alert } from "./ui/alert";
import { TableBox, td, th, theadClass } from "./ui/table";
import { Time } from "./ui/time";
import { DeliveryBadge, LastAnswer, requestsText } from "./webhook-deliveries";

/**
 * A job's webhook deliveries, on its page: the events about it sent to the tenant's endpoints
 * (or the delivery a `webhook_delivery` job carries), each opening on its endpoint's page.
 * Nothing at all while loading or when there are none: most jobs have none.
 */
export function JobWebhookDeliveries({ jobId }: { jobId: string }) {
  const query = useQuery({
    queryKey: webhookKeys.jobDeliveries(jobId),
    queryFn: () => fetchJobDeliveries(jobId),
    refetchInterval: 5_000,
  });
  if (query.isPending) return null;
  if (query.isError) return <Alert tone="error">Could not load its webhook deliveries: {query.error.message}</Alert>;
  const deliveries = query.data.deliveries;
  if (deliveries.length === 0) return null;
  return (
    <section aria-labelledby="job-webhooks-heading" className="space-y-2" data-testid="job-webhook-deliveries">
      <h2 id="job-webhooks-heading" className="text-lg font-semibold">
        Webhook deliveries
      </h2>
      <TableBox label="Its webhook deliveries">
        <thead className={theadClass}>
          <tr>
            <th className={th}>Event</th>
            <th className={th}>Status</th>
            <th className={th}>Requests</th>
            <th className={th}>Last answer</th>
            <th className={th}>Created</th>
          </tr>
        </thead>
        <tbody>
          {deliveries.map((d) => (
            <tr key={d.id} className="border-t border-slate-100" data-delivery-id={d.id}>
              <td className={td}>
                <Link
                  href={deliveriesHref(d.endpointId, { delivery: d.id })}
                  className="font-medium text-indigo-700 underline"
                >
                  <code>{d.eventType}</code>
                </Link>
              </td>
              <td className={td}>
                <DeliveryBadge status={d.status} />
              </td>
              <td className={td}>{requestsText(d)}</td>
              <td className={td}>
                <LastAnswer delivery={d} />
              </td>
              <td className={td}>
                <Time iso={d.createdAt} mode="absolute" />
              </td>
            </tr>
          ))}
        </tbody>
      </TableBox>
    </section>
  );
}
