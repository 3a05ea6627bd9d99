"use client";

import { useMutation, useQueryClient } from "@tanstack/react-query";
import { refetchAfterChange } from "@/lib/client/refresh";
import Link from "next/link";
import { useId, useState, type FormEvent } from "react";
import { ApiError } from "@/lib/client/api";
import {
  createEndpoint,
  updateEndpoint,
  webhookKeys,
  WEBHOOK_EVENTS,
  type EndpointDto,
  type WebhookEvent,
} from "@/lib/client/webhooks";
import { Alert } from "./ui/alert";
import { Button } from "./ui/button";
import { CopyButton } from "./ui/copy-button";
import { fieldClass as field } from "./ui/select";

/** The paths this form shows next to a field; an error naming another is shown above the button. */
const SHOWN = ["url", "events", "description", "rateLimitPerSecond"];
const shownPath = (path: string) => SHOWN.find((p) => path === p || path.startsWith(`${p}.`));

/** A secret shown this once, with a Copy button. */
export function SecretOnce({ secret, children }: { secret: string; children?: React.ReactNode }) {
  return (
    <Alert tone="warning" title="Copy this signing secret now; it is not shown again." testId="new-secret">
      <code data-testid="secret" className="mt-2 block font-mono break-all">
        {secret}
      </code>
      {children}
      <CopyButton text={secret} label="Copy secret" className="mt-2" />
    </Alert>
  );
}

/**
 * Adds a webhook endpoint: its URL, the events it receives, a description and
 * a rate limit; then shows its secret once. Given `endpoint`, edits that one
 * instead (same fields, its values filled in; `onDone` after saving). `onDone` also closes
 * the form (Cancel, or Done once the new secret is copied).
 */
export function WebhookForm({ endpoint, onDone }: { endpoint?: EndpointDto; onDone?: () => void } = {}) {
  const qc = useQueryClient();
  const id = useId();
  const [created, setCreated] = useState<{ endpoint: EndpointDto; secret: string } | null>(null);
  const mutation = useMutation({
    mutationFn: async (body: Parameters<typeof createEndpoint>[0]) =>
      endpoint ? { endpoint: await updateEndpoint(endpoint.id, body), secret: null } : createEndpoint(body),
    onSuccess: (r) => {
      if (r.secret) setCreated({ endpoint: r.endpoint, secret: r.secret });
      void refetchAfterChange(qc, webhookKeys.all);
      if (endpoint) onDone?.();
    },
  });
  const error = mutation.error instanceof ApiError ? mutation.error : null;
  const fieldError = (path: string) => error?.fields.find((f) => shownPath(f.path) === path)?.message;
  const unshown = error && (!error.fields.length || error.fields.some((f) => !shownPath(f.path)));

  const onSubmit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = e.currentTarget;
    const data = new FormData(form);
    const description = String(data.get("description") ?? "").trim();
    const rate = String(data.get("rateLimitPerSecond") ?? "").trim();
    setCreated(null);
    mutation.mutate(
      {
        url: String(data.get("url") ?? "").trim(),
        events: data.getAll("events").map(String) as WebhookEvent[],
        ...(description || endpoint ? { description } : {}),
        ...(rate ? { rateLimitPerSecond: Number(rate) } : {}),
      },
      { onSuccess: () => (endpoint ? undefined : form.reset()) },
    );
  };

  const errorOf = (path: string) => {
    const message = fieldError(path);
    return message ? (
      <span id={`${id}-${path}-error`} className="mt-1 block text-xs font-normal text-red-700">
        {message}
      </span>
    ) : null;
  };
  const describedBy = (path: string, help?: string) =>
    [help, fieldError(path) ? `${id}-${path}-error` : undefined].filter(Boolean).join(" ") || undefined;

  return (
    <div className="space-y-4">
      <form
        onSubmit={onSubmit}
        aria-label={endpoint ? "Edit endpoint" : "New endpoint"}
        noValidate
        className="space-y-5 rounded-lg border border-slate-200 bg-white p-5 shadow-sm"
      >
        <h2 className="text-lg font-semibold">{endpoint ? "Edit endpoint" : "New endpoint"}</h2>
        <label className="block max-w-xl text-sm font-medium">
          URL
          <input
            name="url"
            type="url"
            required
            maxLength={2048}
            placeholder="https://example.com/webhooks/conveyor"
            defaultValue={endpoint?.url}
            spellCheck={false}
            autoComplete="off"
            className={field}
            aria-invalid={Boolean(fieldError("url"))}
            aria-describedby={describedBy("url")}
          />
          {errorOf("url")}
        </label>
        <fieldset aria-describedby={describedBy("events")}>
          <legend className="text-sm font-medium">Events</legend>
          <div className="mt-1 flex flex-wrap gap-x-5 gap-y-2">
            {WEBHOOK_EVENTS.map((ev) => (
              <label key={ev} className="inline-flex items-center gap-2 text-sm">
                <input
                  type="checkbox"
                  name="events"
                  value={ev}
                  defaultChecked={endpoint ? endpoint.events.includes(ev) : ev === "job.succeeded"}
                />
                <code>{ev}</code>
              </label>
            ))}
          </div>
          {errorOf("events")}
        </fieldset>
        <div className="grid gap-4 md:grid-cols-3">
          <label className="text-sm font-medium md:col-span-2">
            Description (optional)
            <input
              name="description"
              maxLength={500}
              placeholder="e.g. Billing service"
              defaultValue={endpoint?.description}
              className={field}
              aria-invalid={Boolean(fieldError("description"))}
              aria-describedby={describedBy("description")}
            />
            {errorOf("description")}
          </label>
          <label className="text-sm font-medium">
            Rate limit (requests per second)
            <input
              name="rateLimitPerSecond"
              type="number"
              min={1}
              max={1000}
              step={1}
              defaultValue={endpoint?.rateLimitPerSecond ?? 10}
              className={field}
              aria-invalid={Boolean(fieldError("rateLimitPerSecond"))}
              aria-describedby={describedBy("rateLimitPerSecond")}
            />
            {errorOf("rateLimitPerSecond")}
          </label>
        </div>
        <div className="flex flex-wrap items-center gap-4">
          <Button type="submit" variant="primary" size="md" disabled={mutation.isPending}>
            {endpoint
              ? mutation.isPending
                ? "Saving…"
                : "Save changes"
              : mutation.isPending
                ? "Adding…"
                : "Add endpoint"}
          </Button>
          {onDone && (
            <Button type="button" size="md" onClick={onDone}>
              {created ? "Done" : "Cancel"}
            </Button>
          )}
          {unshown && (
            <Alert tone="error" inline>
              {error.message}
            </Alert>
          )}
          {error && !unshown && (
            <Alert tone="error" inline>
              Check the fields marked above.
            </Alert>
          )}
          {mutation.error && !error && (
            <Alert tone="error" inline>
              {mutation.error.message}
            </Alert>
          )}
        </div>
      </form>
      {created && (
        <SecretOnce secret={created.secret}>
          <p className="mt-2">
            Endpoint <span className="break-all">{created.endpoint.url}</span> added. Verify each request&apos;s{" "}
            <code>webhook-signature</code> with this secret; it will not be shown again (rotate it on the
            endpoint&apos;s page to get a new one).{" "}
            <Link className="underline" href={`/settings/webhooks/${created.endpoint.id}`}>
              Open it
            </Link>
          </p>
        </SecretOnce>
      )}
    </div>
  );
}
