"use client";

import { useMutation, useQueryClient } from "@tanstack/react-query";
import { refetchAfterChange } from "@/lib/client/refresh";
import { useState, type FormEvent } from "react";
import { peopleKeys, updateTenantSettings, type TenantDto, type TenantSettingsForm } from "@/lib/client/accounts";
import { ApiError } from "@/lib/client/api";
import { Alert } from "./ui/alert";
import { Button } from "./ui/button";
import { fieldClass } from "./ui/select";

const fields = [
  { name: "jobRetentionDays", label: "Finished jobs", own: (t: TenantDto) => t.retention.jobDays },
  { name: "deadLetterRetentionDays", label: "Dead letters", own: (t: TenantDto) => t.retention.deadLetterDays },
  { name: "auditRetentionDays", label: "Audit entries", own: (t: TenantDto) => t.retention.auditDays },
] as const;

const effective = (t: TenantDto, name: (typeof fields)[number]["name"]) =>
  name === "jobRetentionDays"
    ? t.effectiveRetention.jobs
    : name === "deadLetterRetentionDays"
      ? t.effectiveRetention.deadLetters
      : t.effectiveRetention.audit;

/**
 * A platform admin's form for one tenant's retention: how many days its finished jobs, dead
 * letters and audit entries are kept before the pruner removes them. Empty: the platform default.
 */
export function TenantRetentionForm({ tenant }: { tenant: TenantDto }) {
  const qc = useQueryClient();
  const [saved, setSaved] = useState(false);
  const save = useMutation({
    mutationFn: (body: TenantSettingsForm) => updateTenantSettings(tenant.slug, body),
    onSuccess: () => {
      setSaved(true);
      void refetchAfterChange(qc, peopleKeys.tenants);
    },
  });
  const onSubmit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    setSaved(false);
    const f = new FormData(e.currentTarget);
    const body: TenantSettingsForm = {};
    for (const { name } of fields) {
      const raw = String(f.get(name) ?? "").trim();
      body[name] = raw === "" ? null : Number(raw);
    }
    save.mutate(body);
  };
  const fieldError = (path: string) =>
    save.error instanceof ApiError ? save.error.fields.find((x) => x.path === path)?.message : undefined;

  return (
    <form
      onSubmit={onSubmit}
      aria-label={`Retention of ${tenant.slug}`}
      className="flex flex-wrap items-end gap-3 rounded-lg border border-slate-200 bg-white p-5 shadow-sm"
    >
      <h2 className="w-full text-lg font-semibold">Retention of {tenant.name}</h2>
      <p className="w-full text-sm text-slate-600">
        Days kept before the pruner removes them. Leave a field empty for the platform default.
      </p>
      {fields.map(({ name, label, own }) => {
        const message = fieldError(name);
        return (
          <label key={name} className="text-sm font-medium">
            {label} (days)
            <input
              name={name}
              type="number"
              min={1}
              max={3650}
              step={1}
              defaultValue={own(tenant) ?? ""}
              placeholder={`default: ${effective(tenant, name)}`}
              className={fieldClass}
              aria-invalid={message ? true : undefined}
              aria-describedby={message ? `${name}-error` : undefined}
            />
            {message && (
              <span id={`${name}-error`} className="mt-1 block text-xs text-red-700">
                {message}
              </span>
            )}
          </label>
        );
      })}
      <Button type="submit" disabled={save.isPending}>
        Save retention
      </Button>
      {saved && !save.error && (
        <Alert tone="success" inline>
          Saved
        </Alert>
      )}
      {save.error && !(save.error instanceof ApiError && save.error.fields.length) && (
        <Alert tone="error">{save.error.message}</Alert>
      )}
    </form>
  );
}
