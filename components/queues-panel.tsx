"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { refetchAfterChange } from "@/lib/client/refresh";
import { useState, type FormEvent } from "react";
import {
  ApiError,
  createPause,
  fetchQueues,
  queueKeys,
  resumePause,
  updateQueueSettings,
  type PauseDto,
  type PauseForm,
  type QueueDto,
} from "@/lib/client/api";
import { formatCount } from "@/lib/client/format";
import { StatusBadge } from "./ui/status-badge";
import { TableBox, th, theadClass } from "./ui/table";
import { Time } from "./ui/time";
import { Alert } from "./ui/alert";
import { Button } from "./ui/button";
import { useConfirm } from "./ui/confirm-dialog";
import { PauseScopeForm, TenantRow } from "./queue-tenants";

/** Who a pause stops, in words. */
function scopeLabel(p: Pick<PauseDto, "queue" | "type" | "tenant">): string {
  const parts = [
    p.queue ? `queue ${p.queue}` : "every queue",
    p.type ? `type ${p.type}` : null,
    p.tenant ? `tenant ${p.tenant.slug}` : "every tenant",
  ];
  return parts.filter(Boolean).join(" · ");
}

/** Whose work a new pause stops, in words: an operator's own tenant, the tenant an admin picked, or every tenant. */
function reachLabel(tenant: string | null): string {
  return tenant ? `tenant ${tenant}` : "every tenant";
}

export function QueuesPanel({
  isAdmin,
  tenantSlug,
  types,
}: {
  isAdmin: boolean;
  /** The operator's own tenant (an operator's pause stops only its work); null for platform admins. */
  tenantSlug: string | null;
  types: string[];
}) {
  const qc = useQueryClient();
  // Counts change with every job: poll while the page is open.
  const queues = useQuery({ queryKey: queueKeys.all, queryFn: fetchQueues, refetchInterval: 3_000 });
  const refresh = () => void refetchAfterChange(qc, queueKeys.all);
  const [done, setDone] = useState<string | null>(null);
  const pause = useMutation({
    mutationFn: createPause,
    onSuccess: (p) => {
      setDone(`Paused: ${scopeLabel(p)}${p.reason ? ` (“${p.reason}”)` : ""}.`);
      refresh();
    },
  });
  const resume = useMutation({
    mutationFn: resumePause,
    onSuccess: (p) => {
      setDone(
        `Resumed: ${scopeLabel(p)}${p.reason ? ` (“${p.reason}”)` : ""}, paused by ${p.createdBy ?? "a deleted user"}. Its jobs start now.`,
      );
      refresh();
    },
  });
  const { confirm, dialog } = useConfirm();
  const tenants = queues.data?.queues[0]?.tenants.map((t) => t.tenant) ?? [];
  // A pause stops other people's work: it is confirmed, with its real reach and a reason for the record.
  const requestPause = async (body: PauseForm) => {
    setDone(null);
    // An operator's pause is their tenant's; an admin's is the tenant picked, or every tenant.
    const tenant = isAdmin
      ? body.tenant
        ? (tenants.find((t) => t.id === body.tenant)?.slug ?? body.tenant)
        : null
      : tenantSlug;
    const scope = scopeLabel({ queue: body.queue ?? null, type: body.type ?? null, tenant: null }).replace(
      / · every tenant$/,
      "",
    );
    const whose = tenant ? `${tenant}'s jobs` : "every tenant's jobs";
    const answer = await confirm({
      title: `Pause ${scope} · ${reachLabel(tenant)}?`,
      message: body.cancelRunning
        ? `None of ${whose} in this scope starts until it is resumed, and every running one is cancelled.`
        : `None of ${whose} in this scope starts until it is resumed; running jobs finish.${
            tenant && !isAdmin ? " Other tenants' jobs are not affected." : ""
          }`,
      confirmLabel: "Pause",
      variant: "warning",
      reason: { label: "Reason", required: true, placeholder: "e.g. the orders database is being migrated" },
    });
    if (answer) pause.mutate({ ...body, reason: answer.reason });
  };

  const allPauses = new Map<string, PauseDto>();
  for (const q of queues.data?.queues ?? []) for (const p of q.pauses) allPauses.set(p.id, p);

  return (
    <div className="space-y-8">
      {dialog}
      {(pause.error || resume.error) && <Alert tone="error">{(pause.error ?? resume.error)?.message}</Alert>}
      {done && (
        <Alert tone="success" testId="queues-done">
          {done}
        </Alert>
      )}
      {queues.error && <Alert tone="error">Could not load the queues: {queues.error.message}</Alert>}
      {queues.isPending && <p className="text-sm text-slate-500">Loading…</p>}
      <p className="text-xs text-slate-500" data-testid="queue-count-words">
        Waiting: due now, not yet given a slot. Scheduled: due later (a retry&apos;s backoff, a start time). Admitted:
        given a slot, not started yet. Running: started. The queue&apos;s numbers are the sum of its tenants&apos;.
      </p>
      <section aria-label="Active pauses" className="rounded-lg border border-slate-200 bg-white shadow-sm">
        <h2 className="border-b border-slate-100 px-5 py-3 text-lg font-medium">Active pauses</h2>
        {allPauses.size === 0 ? (
          <p className="px-5 py-4 text-sm text-slate-500">Nothing is paused.</p>
        ) : (
          <ul>
            {[...allPauses.values()].map((p) => (
              <li
                key={p.id}
                id={`pause-${p.id}`}
                data-testid="pause"
                className="flex scroll-mt-4 flex-wrap items-center gap-x-4 gap-y-1 border-t border-slate-100 px-5 py-3 text-sm first:border-0 target:bg-amber-50"
              >
                <span className="font-medium">{scopeLabel(p)}</span>
                <span className="text-slate-600">
                  paused by <span className="font-medium">{p.createdBy ?? "a deleted user"}</span> since{" "}
                  <Time iso={p.createdAt} />
                </span>
                {p.reason && <span className="text-slate-600">“{p.reason}”</span>}
                {p.cancelRunning && <span className="text-amber-700">running jobs were cancelled</span>}
                {(isAdmin || p.tenant) && (
                  <Button
                    variant="primary"
                    className="ml-auto"
                    onClick={() => {
                      setDone(null);
                      resume.mutate(p.id);
                    }}
                    disabled={resume.isPending}
                    aria-label={`Resume ${scopeLabel(p)}`}
                  >
                    Resume
                  </Button>
                )}
              </li>
            ))}
          </ul>
        )}
      </section>

      <div className="grid gap-6 md:grid-cols-2">
        {queues.data?.queues.map((q) => (
          <QueueCard
            key={q.name}
            queue={q}
            isAdmin={isAdmin}
            busy={pause.isPending || resume.isPending}
            onPause={(body) => void requestPause(body)}
            onResume={(id) => resume.mutate(id)}
            onLimitSaved={refresh}
          />
        ))}
      </div>

      <PauseScopeForm
        isAdmin={isAdmin}
        types={types}
        tenants={tenants}
        busy={pause.isPending}
        onSubmit={(body) => void requestPause(body)}
      />
    </div>
  );
}

function QueueCard({
  queue: q,
  isAdmin,
  busy,
  onPause,
  onResume,
  onLimitSaved,
}: {
  queue: QueueDto;
  isAdmin: boolean;
  busy: boolean;
  onPause: (body: PauseForm) => void;
  onResume: (id: string) => void;
  onLimitSaved: () => void;
}) {
  // The pause that stops this whole queue for the caller's view, if any.
  const whole = q.pauses.find(
    (p) => p.queue === q.name && p.type === null && (isAdmin ? !p.tenant : Boolean(p.tenant)),
  );
  return (
    <section
      aria-label={`Queue ${q.name}`}
      data-testid={`queue-${q.name}`}
      className="min-w-0 rounded-lg border border-slate-200 bg-white shadow-sm"
    >
      <header className="flex flex-wrap items-center gap-3 border-b border-slate-100 px-5 py-3">
        <h2 className="text-lg font-medium">{q.name}</h2>
        <StatusBadge status={q.paused ? "paused" : "running"} testId={`${q.name}-state`} />
        <span className="ml-auto">
          {whole ? (
            <Button variant="primary" disabled={busy} onClick={() => onResume(whole.id)}>
              Resume {q.name}
            </Button>
          ) : (
            <Button variant="warning" disabled={busy} onClick={() => onPause({ queue: q.name })}>
              Pause {q.name}
            </Button>
          )}
        </span>
      </header>
      <dl className="grid grid-cols-2 gap-2 px-5 py-3 text-sm sm:grid-cols-4">
        {(
          [
            ["Waiting", q.waiting],
            ["Scheduled", q.scheduled],
            ["Admitted", q.admitted],
            ["Running", q.running],
          ] as const
        ).map(([label, n]) => (
          <div key={label}>
            <dt className="text-slate-500">{label}</dt>
            <dd className="text-xl font-semibold" data-testid={`${q.name}-${label.toLowerCase()}`}>
              {formatCount(n)}
            </dd>
          </div>
        ))}
      </dl>
      <QueueDefaults queue={q} isAdmin={isAdmin} onSaved={onLimitSaved} />
      <TableBox label={`Tenants on ${q.name}`} className="mx-3 mb-3 mt-2 w-auto shadow-none">
        <thead className={theadClass}>
          <tr>
            <th className={th}>Tenant</th>
            <th className={th}>Waiting</th>
            <th className={th}>Scheduled</th>
            <th className={th}>Admitted</th>
            <th className={th}>Running</th>
            <th className={th}>Cap · weight</th>
          </tr>
        </thead>
        <tbody>
          {q.tenants.map((t) => (
            <TenantRow key={t.tenant.id} queue={q.name} row={t} isAdmin={isAdmin} onSaved={onLimitSaved} />
          ))}
        </tbody>
      </TableBox>
    </section>
  );
}

/** The two numbers of a queue's defaults form. */
function defaultFields(q: QueueDto) {
  return [
    { name: "tenantCap", label: "Default cap per tenant", min: 0, value: q.tenantCap },
    { name: "window", label: "Window (all tenants)", min: 1, value: q.window },
  ];
}

/**
 * A queue's default per-tenant cap and window: the fleet's, in the database. Platform admins edit
 * them here; everybody else sees them.
 */
function QueueDefaults({ queue: q, isAdmin, onSaved }: { queue: QueueDto; isAdmin: boolean; onSaved: () => void }) {
  const [editing, setEditing] = useState(false);
  const save = useMutation({
    mutationFn: (body: { tenantCap: number; window: number }) => updateQueueSettings(q.name, body),
    onSuccess: () => {
      setEditing(false);
      onSaved();
    },
  });
  const onSubmit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const f = new FormData(e.currentTarget);
    save.mutate({ tenantCap: Number(f.get("tenantCap")), window: Number(f.get("window")) });
  };
  // A 400 names its fields: those inputs are marked.
  const fieldsInError = save.error instanceof ApiError ? save.error.fields.map((f) => f.path) : [];
  if (editing) {
    return (
      <form
        onSubmit={onSubmit}
        aria-label={`Defaults of ${q.name}`}
        className="flex flex-wrap items-end gap-3 px-5 text-sm"
      >
        {defaultFields(q).map((field) => {
          const invalid = fieldsInError.includes(field.name);
          return (
            <label key={field.name} className="flex flex-col text-xs text-slate-600">
              {field.label}
              <input
                name={field.name}
                type="number"
                min={field.min}
                max={100_000}
                required
                defaultValue={field.value}
                aria-invalid={invalid || undefined}
                className="mt-0.5 w-24 rounded border border-slate-300 px-2 py-0.5 text-sm text-slate-900 aria-[invalid=true]:border-red-600"
              />
            </label>
          );
        })}
        <Button type="submit" variant="primary" disabled={save.isPending}>
          Save defaults
        </Button>
        <Button type="button" variant="link" onClick={() => setEditing(false)}>
          Cancel
        </Button>
        {save.error && (
          <Alert tone="error" inline className="text-xs">
            {save.error.message}
          </Alert>
        )}
      </form>
    );
  }
  return (
    <p className="px-5 text-xs text-slate-500" data-testid={`${q.name}-defaults`}>
      Default cap {q.tenantCap} per tenant · window {q.window} admitted at once across tenants
      {q.updatedBy && <> · set by {q.updatedBy}</>}
      {isAdmin && (
        <Button variant="link" onClick={() => setEditing(true)} className="ml-3 text-xs">
          Edit defaults
        </Button>
      )}
    </p>
  );
}
