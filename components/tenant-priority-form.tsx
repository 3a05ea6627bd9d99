"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { fetchTenantPriority, priorityKeys, setTenantPriority } from "@/lib/client/accounts";
import { refetchAfterChange } from "@/lib/client/refresh";
import type { MaxPriorityName } from "@/lib/jobs/priority-names";
import { Alert } from "./ui/alert";
import { Button } from "./ui/button";
import { Select } from "./ui/select";

/**
 * An operator's (or a platform admin's) control of the highest priority a tenant's callers may
 * ask for when they create a job: `normal` (high is refused) or `high`. Audited.
 */
export function TenantPriorityForm({ tenant }: { tenant: string }) {
  const qc = useQueryClient();
  const [saved, setSaved] = useState(false);
  const current = useQuery({ queryKey: priorityKeys.tenant(tenant), queryFn: () => fetchTenantPriority(tenant) });
  const save = useMutation({
    mutationFn: (max: MaxPriorityName) => setTenantPriority(tenant, max),
    onSuccess: () => {
      setSaved(true);
      void refetchAfterChange(qc, priorityKeys.tenant(tenant));
    },
  });
  const onSubmit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    setSaved(false);
    save.mutate(String(new FormData(e.currentTarget).get("maxPriority")) as MaxPriorityName);
  };
  return (
    <form
      onSubmit={onSubmit}
      aria-label={`Job priorities of ${tenant}`}
      className="flex flex-wrap items-end gap-3 rounded-lg border border-slate-200 bg-white p-5 shadow-sm"
    >
      <h2 className="w-full text-lg font-semibold">Job priorities</h2>
      <p className="w-full text-sm text-slate-600">
        A request may ask for <code>low</code>, <code>normal</code> or <code>high</code> priority: it orders {tenant}
        &apos;s own waiting jobs, never other tenants&apos;. Allow <code>high</code> here, or keep it refused.
      </p>
      {current.data && (
        <Select
          key={current.data.maxPriority}
          label="Highest priority allowed"
          name="maxPriority"
          defaultValue={current.data.maxPriority}
          options={[
            ["normal", "normal (high is refused)"],
            ["high", "high"],
          ]}
        />
      )}
      <Button type="submit" disabled={save.isPending || !current.data}>
        Save
      </Button>
      {saved && !save.isPending && (
        <Alert tone="success" inline>
          Saved.
        </Alert>
      )}
      {(save.error ?? current.error) && <Alert tone="error">{(save.error ?? current.error)?.message}</Alert>}
    </form>
  );
}
