"use client";

/**
 * The jobs explorer's filter form: status, type, queue, tenant (platform
 * admins), search, a date range in the viewer's zone, and "Show parts".
 */
import type { FormEvent } from "react";
import { Button } from "./ui/button";
import { fieldClass, QueueSelect, Select } from "./ui/select";

const STATUSES = ["scheduled", "queued", "running", "retrying", "succeeded", "failed", "cancelled", "expired"];

/** The form's fields as typed, before they are applied to the URL. */
export type Draft = Record<"status" | "type" | "queue" | "tenant" | "q" | "from" | "to", string> & {
  children: boolean;
};

export function JobFilterForm({
  values,
  setField,
  onSubmit,
  apply,
  types,
  isAdmin,
  zoneHint,
  rangeMessage,
  clearRangeError,
}: {
  values: Draft;
  setField: <K extends keyof Draft>(k: K, v: Draft[K]) => void;
  onSubmit: (e: FormEvent<HTMLFormElement>) => void;
  apply: (v: Draft) => void;
  types: string[];
  isAdmin: boolean;
  zoneHint: string;
  rangeMessage: string | null;
  clearRangeError: () => void;
}) {
  return (
    <form
      onSubmit={onSubmit}
      aria-label="Filter jobs"
      noValidate
      className="grid grid-cols-1 gap-3 rounded-lg border border-slate-200 bg-white p-4 shadow-sm sm:grid-cols-2 lg:grid-cols-4"
    >
      <Select
        label="Status"
        name="status"
        options={STATUSES}
        any="any"
        value={values.status}
        onChange={(e) => setField("status", e.target.value)}
      />
      <Select
        label="Type"
        name="type"
        options={types.includes(values.type) || !values.type ? types : [...types, values.type]}
        any="any"
        value={values.type}
        onChange={(e) => setField("type", e.target.value)}
      />
      <QueueSelect
        label="Queue"
        name="queue"
        any="any"
        value={values.queue}
        onChange={(e) => setField("queue", e.target.value)}
      />
      {isAdmin && (
        <label className="text-sm font-medium">
          Tenant
          <input
            name="tenant"
            placeholder="slug or id"
            className={fieldClass}
            value={values.tenant}
            onChange={(e) => setField("tenant", e.target.value)}
          />
        </label>
      )}
      <label className="text-sm font-medium sm:col-span-2">
        Search input and errors
        <input
          name="q"
          placeholder="text"
          className={fieldClass}
          value={values.q}
          onChange={(e) => setField("q", e.target.value)}
        />
      </label>
      <fieldset className="grid min-w-0 grid-cols-1 gap-3 sm:col-span-2 sm:grid-cols-2">
        <legend className="text-sm font-medium">Created</legend>
        <p id="jobs-filter-zone" className="text-xs text-slate-500 sm:col-span-2">
          {zoneHint}
        </p>
        <label className="text-sm font-medium">
          From
          <input
            id="jobs-filter-from"
            name="from"
            type="date"
            className={fieldClass}
            aria-describedby="jobs-filter-zone"
            value={values.from}
            onChange={(e) => {
              clearRangeError();
              setField("from", e.target.value);
            }}
          />
        </label>
        <div>
          <label className="text-sm font-medium">
            To
            <input
              id="jobs-filter-to"
              name="to"
              type="date"
              className={fieldClass}
              aria-invalid={rangeMessage ? true : undefined}
              aria-describedby={rangeMessage ? "jobs-filter-to-error jobs-filter-zone" : "jobs-filter-zone"}
              value={values.to}
              onChange={(e) => {
                clearRangeError();
                setField("to", e.target.value);
              }}
            />
          </label>
          {rangeMessage && (
            <p id="jobs-filter-to-error" className="mt-1 text-sm text-red-700">
              {rangeMessage}
            </p>
          )}
        </div>
      </fieldset>
      <label className="flex items-center gap-2 self-end text-sm font-medium">
        <input
          type="checkbox"
          name="children"
          checked={values.children}
          onChange={(e) => {
            // Applied at once, with the rest of the form.
            setField("children", e.target.checked);
            apply({ ...values, children: e.target.checked });
          }}
        />
        Show parts
      </label>
      <Button type="submit" variant="primary" size="md" className="self-end">
        Apply filter
      </Button>
    </form>
  );
}
