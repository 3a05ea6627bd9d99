"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { refetchAfterChange } from "@/lib/client/refresh";
import Link from "next/link";
import { useRouter } from "next/navigation";
import { useState, type FormEvent, type ReactNode } from "react";
import { ApiError } from "@/lib/client/api";
import { formatCount } from "@/lib/client/format";
import { localInputToIso } from "@/lib/client/schedules";
import {
  deleteEndpoint,
  fetchEndpoint,
  recoverEndpoint,
  rotateSecret,
  sendTestEvent,
  updateEndpoint,
  webhookKeys,
} from "@/lib/client/webhooks";
import { SecretOnce, WebhookForm } from "./webhook-form";
import { EndpointHealth, EndpointState } from "./webhook-list";
import { Alert } from "./ui/alert";
import { Button } from "./ui/button";
import { useConfirm } from "./ui/confirm-dialog";
import { fieldClass as field } from "./ui/select";
import { Deliveries } from "./webhook-deliveries";
import { Time } from "./ui/time";

const card = "rounded-lg border border-slate-200 bg-white p-5 shadow-sm";

function Row({ label, children }: { label: string; children: ReactNode }) {
  return (
    <div className="grid grid-cols-3 gap-2 py-2 sm:gap-4">
      <dt className="text-sm text-slate-600">{label}</dt>
      <dd className="col-span-2 text-sm">{children}</dd>
    </div>
  );
}

/**
 * An endpoint's page: its URL, events and health; send a test event, rotate
 * its secret, disable or enable it, delete it, replay what failed since a
 * time; and its deliveries, live (before the recovery form: they are what people come for).
 */
export function WebhookDetail({ id }: { id: string }) {
  const qc = useQueryClient();
  const router = useRouter();
  const { confirm, dialog } = useConfirm();
  const [notice, setNotice] = useState<string | null>(null);
  const [rotated, setRotated] = useState<{ secret: string; previousSecretExpiresAt: string } | null>(null);
  const [editing, setEditing] = useState(false);
  const query = useQuery({
    queryKey: webhookKeys.detail(id),
    queryFn: () => fetchEndpoint(id),
    refetchInterval: 2_000,
  });
  const refresh = () => void refetchAfterChange(qc, webhookKeys.all);
  const test = useMutation({
    mutationFn: () => sendTestEvent(id),
    onSuccess: (r) => {
      setNotice(`Test event sent (webhook-id ${r.messageId}): it appears in the deliveries below.`);
      refresh();
    },
  });
  const rotate = useMutation({
    mutationFn: () => rotateSecret(id),
    onSuccess: (r) => {
      setRotated(r);
      setNotice(null);
      refresh();
    },
  });
  const toggle = useMutation({
    mutationFn: (disabled: boolean) => updateEndpoint(id, { disabled }),
    onSuccess: (e) => {
      qc.setQueryData(webhookKeys.detail(id), e);
      setNotice(e.disabled ? "Disabled: nothing is sent to it until it is enabled." : "Enabled.");
      refresh();
    },
  });
  const remove = useMutation({
    mutationFn: () => deleteEndpoint(id),
    onSuccess: () => {
      qc.removeQueries({ queryKey: webhookKeys.detail(id) });
      void refetchAfterChange(qc, webhookKeys.lists());
      router.push("/settings/webhooks");
    },
  });

  if (query.isPending) return <p className="text-sm text-slate-600">Loading the endpoint…</p>;
  if (query.isError) return <Alert tone="error">Could not load the endpoint: {query.error.message}</Alert>;
  const e = query.data;
  const error = test.error ?? rotate.error ?? toggle.error ?? remove.error;
  const busy = test.isPending || rotate.isPending || toggle.isPending || remove.isPending;

  return (
    <div className="space-y-6">
      {dialog}
      <p className="text-sm">
        <Link href="/settings/webhooks" className="text-indigo-700 underline">
          Webhooks
        </Link>
      </p>
      <div className="flex flex-wrap items-center gap-3">
        <h1 className="min-w-0 text-2xl font-semibold break-all">{e.url}</h1>
        <EndpointState endpoint={e} />
      </div>
      <div className="flex flex-wrap gap-2">
        <Button variant="primary" disabled={busy || e.disabled} onClick={() => test.mutate()}>
          Send test event
        </Button>
        <Button
          disabled={busy}
          onClick={async () => {
            const ok = await confirm({
              title: "Rotate the signing secret?",
              message:
                "A new secret signs every request from now on; the current one keeps signing too (a second signature) for 24 hours, so receivers can switch over.",
              confirmLabel: "Rotate secret",
            });
            if (ok) rotate.mutate();
          }}
        >
          Rotate secret
        </Button>
        <Button disabled={busy || editing} onClick={() => setEditing(true)}>
          Edit
        </Button>
        <Button variant={e.disabled ? "primary" : "warning"} disabled={busy} onClick={() => toggle.mutate(!e.disabled)}>
          {e.disabled ? "Enable" : "Disable"}
        </Button>
        <Button
          variant="danger"
          disabled={busy}
          onClick={async () => {
            const ok = await confirm({
              title: "Delete this endpoint?",
              message:
                "Nothing is sent to it any more; its waiting deliveries are cancelled and its delivery history goes with it. This cannot be undone.",
              confirmLabel: "Delete endpoint",
              variant: "danger",
            });
            if (ok) remove.mutate();
          }}
        >
          Delete
        </Button>
      </div>
      {error && <Alert tone="error">{error.message}</Alert>}
      {notice && !error && (
        <Alert tone="success" testId="webhook-notice">
          {notice}
        </Alert>
      )}
      {rotated && (
        <SecretOnce secret={rotated.secret}>
          <p className="mt-2" data-testid="rotation-note">
            The old secret keeps signing too for 24 h, until{" "}
            <Time iso={rotated.previousSecretExpiresAt} mode="absolute" />.
          </p>
        </SecretOnce>
      )}

      {editing && (
        <WebhookForm
          endpoint={e}
          onDone={() => {
            setEditing(false);
            refresh();
          }}
        />
      )}
      <div className="grid gap-6 md:grid-cols-2">
        <section aria-label="Settings" className={card}>
          <h2 className="mb-2 font-semibold">Settings</h2>
          <dl className="divide-y divide-slate-100">
            <Row label="Events">
              <ul>
                {e.events.map((ev) => (
                  <li key={ev}>
                    <code className="text-xs">{ev}</code>
                  </li>
                ))}
              </ul>
            </Row>
            {e.description && <Row label="Description">{e.description}</Row>}
            <Row label="Rate limit">{formatCount(e.rateLimitPerSecond)} requests per second</Row>
            <Row label="Tenant">{e.tenant}</Row>
            {e.disabled && (
              <Row label="Disabled">
                <span data-testid="disabled-detail">
                  <Time iso={e.disabledAt} mode="absolute" />
                  {e.disabledReason ? `: ${e.disabledReason}` : ""}
                </span>
              </Row>
            )}
            {e.previousSecretExpiresAt && (
              <Row label="Old secret">
                signs too until <Time iso={e.previousSecretExpiresAt} mode="absolute" />
              </Row>
            )}
            <Row label="Created">
              <Time iso={e.createdAt} mode="absolute" />
            </Row>
          </dl>
        </section>
        <section aria-label="Health" className={card}>
          <h2 className="mb-2 font-semibold">Health</h2>
          <EndpointHealth health={e.health} endpointId={e.id} />
        </section>
      </div>

      <Deliveries id={id} />
      <RecoverForm id={id} disabled={e.disabled} onDone={refresh} />
    </div>
  );
}

/** Replays every failed delivery created since a time (the reader's clock). */
function RecoverForm({ id, disabled, onDone }: { id: string; disabled: boolean; onDone: () => void }) {
  const mutation = useMutation({
    mutationFn: (since: string) => recoverEndpoint(id, since),
    onSuccess: onDone,
  });
  const error = mutation.error instanceof ApiError ? mutation.error : null;
  const sinceError = error?.fields.find((f) => f.path === "since")?.message;
  const onSubmit = (ev: FormEvent<HTMLFormElement>) => {
    ev.preventDefault();
    const data = new FormData(ev.currentTarget);
    mutation.mutate(localInputToIso(String(data.get("since") ?? "")));
  };
  return (
    <form onSubmit={onSubmit} aria-label="Recover failed deliveries" className={card}>
      <h2 className="font-semibold">Recover failed deliveries</h2>
      <p className="mb-3 text-sm text-slate-600">
        Sends again every delivery that failed for good since a time (your clock), each with its own webhook-id.
      </p>
      <div className="flex flex-wrap items-end gap-4">
        <label className="text-sm font-medium">
          Failed since
          <input
            type="datetime-local"
            name="since"
            step={1}
            required
            className={field}
            aria-invalid={Boolean(sinceError)}
            aria-describedby={sinceError ? "recover-since-error" : undefined}
          />
          {sinceError && (
            <span id="recover-since-error" className="mt-1 block text-xs font-normal text-red-700">
              {sinceError}
            </span>
          )}
        </label>
        <Button type="submit" disabled={mutation.isPending || disabled}>
          {mutation.isPending ? "Recovering…" : "Recover failed since…"}
        </Button>
        {mutation.error && !sinceError && (
          <Alert tone="error" inline>
            {mutation.error.message}
          </Alert>
        )}
        {mutation.data && !mutation.error && (
          <Alert tone={mutation.data.replayed ? "success" : "neutral"} inline testId="recover-result">
            {formatCount(mutation.data.replayed)} failed delivery(ies) sent again.
          </Alert>
        )}
      </div>
    </form>
  );
}
