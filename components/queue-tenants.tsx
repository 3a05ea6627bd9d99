"use client";

/**
 * A queue's per-tenant rows (caps, weights, their pauses) and the form that
 * pauses a scope, for the Queues page.
 */
import { useMutation } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { setTenantLimit, type PauseForm, type QueueTenantDto } from "@/lib/client/api";
import { formatCount } from "@/lib/client/format";
import { Alert } from "./ui/alert";
import { Button } from "./ui/button";
import { QueueSelect, Select } from "./ui/select";
import { td } from "./ui/table";

export function TenantRow({
  queue,
  row: t,
  isAdmin,
  onSaved,
}: {
  queue: string;
  row: QueueTenantDto;
  isAdmin: boolean;
  onSaved: () => void;
}) {
  const [editing, setEditing] = useState(false);
  const save = useMutation({
    mutationFn: (body: { maxRunning: number | null; weight: number }) => setTenantLimit(queue, t.tenant.id, body),
    onSuccess: () => {
      setEditing(false);
      onSaved();
    },
  });
  const onSubmit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const f = new FormData(e.currentTarget);
    const cap = String(f.get("cap") ?? "").trim();
    save.mutate({ maxRunning: cap === "" ? null : Number(cap), weight: Number(f.get("weight") ?? 1) });
  };
  return (
    <tr className="border-t border-slate-100" data-testid={`tenant-${queue}-${t.tenant.slug}`}>
      <td className={td}>
        {t.tenant.name}
        {t.paused && <span className="ml-2 text-xs text-amber-700">paused</span>}
      </td>
      {/* The queue card's four numbers, per tenant: the card's are their sums. */}
      <td className={td} data-testid="tenant-waiting">
        {formatCount(t.waiting)}
      </td>
      <td className={td} data-testid="tenant-scheduled">
        {formatCount(t.scheduled)}
      </td>
      <td className={td} data-testid="tenant-admitted">
        {formatCount(t.admitted)}
      </td>
      <td className={td} data-testid="tenant-running">
        {formatCount(t.running)}
      </td>
      {editing ? (
        <td className={td}>
          <form
            onSubmit={onSubmit}
            className="flex flex-wrap items-center gap-2"
            aria-label={`Limits of ${t.tenant.slug}`}
          >
            <input
              name="cap"
              type="number"
              min={0}
              defaultValue={t.capOverride ?? ""}
              placeholder={`default`}
              aria-label="Cap"
              className="w-20 rounded border border-slate-300 px-2 py-0.5"
            />
            <input
              name="weight"
              type="number"
              min={1}
              max={100}
              defaultValue={t.weight}
              aria-label="Weight"
              className="w-14 rounded border border-slate-300 px-2 py-0.5"
            />
            <Button type="submit" variant="link" disabled={save.isPending}>
              Save
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
        </td>
      ) : (
        <>
          <td className={td} data-testid="tenant-cap">
            {t.cap}
            {t.capOverride === null && <span className="text-xs text-slate-500"> default</span>}
            <span className="text-xs text-slate-500"> · weight {t.weight}</span>
            {isAdmin && (
              <Button
                variant="link"
                onClick={() => setEditing(true)}
                className="ml-3 text-xs"
                aria-label={`Edit the cap and weight of ${t.tenant.slug}`}
              >
                Edit
              </Button>
            )}
          </td>
        </>
      )}
    </tr>
  );
}

export function PauseScopeForm({
  isAdmin,
  types,
  tenants,
  busy,
  onSubmit,
}: {
  isAdmin: boolean;
  types: string[];
  tenants: { id: string; slug: string; name: string }[];
  busy: boolean;
  onSubmit: (body: PauseForm) => void;
}) {
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const f = new FormData(e.currentTarget);
    const pick = (k: string) => (String(f.get(k) ?? "") || undefined) as string | undefined;
    const cancelRunning = f.get("cancelRunning") === "on";
    onSubmit({
      queue: pick("queue"),
      type: pick("type"),
      tenant: pick("tenant"),
      cancelRunning,
    });
  };
  return (
    <form
      onSubmit={submit}
      aria-label="Pause a scope"
      className="grid gap-3 rounded-lg border border-slate-200 bg-white p-5 shadow-sm md:grid-cols-6"
    >
      <h2 className="text-lg font-medium md:col-span-6">Pause a scope</h2>
      <QueueSelect label="Queue" name="queue" any="every queue" defaultValue="" />
      <Select label="Job type" name="type" options={types} any="every type" defaultValue="" />
      {isAdmin && (
        <Select
          label="Tenant"
          name="tenant"
          options={tenants.map((t) => [t.id, t.name] as const)}
          any="every tenant"
          defaultValue=""
        />
      )}
      <label className="flex items-center gap-2 self-end text-sm">
        <input name="cancelRunning" type="checkbox" /> Cancel running jobs
      </label>
      <div className="md:col-span-6">
        <Button type="submit" variant="warning" size="md" disabled={busy}>
          Pause
        </Button>
      </div>
    </form>
  );
}
