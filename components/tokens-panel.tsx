"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { refetchAfterChange } from "@/lib/client/refresh";
import { useState, type FormEvent } from "react";
import { ApiError, createToken, fetchTokens, revokeToken, tokenKeys, type TokenDto } from "@/lib/client/api";
import { Alert } from "./ui/alert";
import { Button } from "./ui/button";
import { CopyButton } from "./ui/copy-button";
import { useConfirm } from "./ui/confirm-dialog";
import { Select } from "./ui/select";
import { Time } from "./ui/time";

export function TokensPanel() {
  const qc = useQueryClient();
  const { confirm, dialog } = useConfirm();
  const [secret, setSecret] = useState<string | null>(null);
  const tokens = useQuery({ queryKey: tokenKeys.all, queryFn: fetchTokens });
  const create = useMutation({
    mutationFn: createToken,
    onSuccess: (r) => {
      setSecret(r.token);
      void refetchAfterChange(qc, tokenKeys.all);
    },
  });
  // What the last revoke did: revoked it, or nothing (it was already revoked, perhaps in another tab).
  const [revoked, setRevoked] = useState<{ name: string; changed: boolean } | null>(null);
  const revoke = useMutation({
    mutationFn: (t: TokenDto) => revokeToken(t.id),
    onMutate: () => setRevoked(null),
    onSuccess: (_r, t) => setRevoked({ name: t.name, changed: true }),
    onError: (err, t) => {
      if (err instanceof ApiError && err.status === 404) setRevoked({ name: t.name, changed: false });
    },
    onSettled: () => void refetchAfterChange(qc, tokenKeys.all),
  });
  const revokeError = revoke.error instanceof ApiError && revoke.error.status === 404 ? null : revoke.error;

  const onSubmit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = e.currentTarget;
    const data = new FormData(form);
    const scopes = data.getAll("scopes").map(String) as ("read" | "write")[];
    const days = Number(data.get("expiresInDays") ?? 0);
    create.mutate(
      { name: String(data.get("name") ?? ""), scopes, ...(days ? { expiresInDays: days } : {}) },
      { onSuccess: () => form.reset() },
    );
  };

  return (
    <div className="space-y-6">
      {dialog}
      <form
        onSubmit={onSubmit}
        aria-label="Create an API token"
        className="flex flex-wrap items-end gap-3 rounded-lg border border-slate-200 bg-white p-5 shadow-sm"
      >
        <label className="min-w-48 flex-1 text-sm font-medium">
          Token name
          <input
            name="name"
            required
            maxLength={100}
            placeholder="e.g. nightly-report"
            className="mt-1 block w-full rounded border border-slate-300 px-3 py-2"
          />
        </label>
        <fieldset className="text-sm">
          <legend className="font-medium">May</legend>
          <label className="mr-3 inline-flex items-center gap-1">
            <input type="checkbox" name="scopes" value="read" defaultChecked /> read
          </label>
          <label className="inline-flex items-center gap-1">
            <input type="checkbox" name="scopes" value="write" defaultChecked /> write
          </label>
        </fieldset>
        <Select
          label="Expires"
          name="expiresInDays"
          defaultValue="90"
          options={[
            ["7", "in 7 days"],
            ["30", "in 30 days"],
            ["90", "in 90 days"],
            ["365", "in a year"],
            ["0", "never"],
          ]}
        />
        <Button type="submit" variant="primary" size="md" disabled={create.isPending}>
          Create token
        </Button>
      </form>
      {create.error && <Alert tone="error">{create.error.message}</Alert>}
      {secret && (
        <Alert tone="warning" title="Copy this token now; it is not shown again.">
          <code data-testid="new-token" className="mt-2 block break-all font-mono">
            {secret}
          </code>
          <CopyButton text={secret} label="Copy token" className="mt-2" />
        </Alert>
      )}
      {revokeError && <Alert tone="error">{revokeError.message}</Alert>}
      {revoked && (
        <Alert tone={revoked.changed ? "success" : "neutral"} testId="revoke-result">
          {revoked.changed
            ? `Token “${revoked.name}” revoked: requests with it are refused from now on.`
            : `Nothing to revoke: token “${revoked.name}” was already revoked.`}
        </Alert>
      )}
      <section aria-label="Your tokens" className="rounded-lg border border-slate-200 bg-white shadow-sm">
        {tokens.data?.tokens.length ? (
          <ul>
            {tokens.data.tokens.map((t) => (
              <li
                key={t.id}
                data-testid="token-row"
                className="flex flex-wrap items-center gap-x-4 gap-y-1 border-t border-slate-100 px-4 py-3 text-sm first:border-0 sm:px-5"
              >
                <span className="min-w-0 break-all font-medium">{t.name}</span>
                <span className="text-slate-600">{t.scopes.join(" + ")}</span>
                <span className="text-slate-600">
                  {t.expiresAt ? (
                    <>
                      expires <Time iso={t.expiresAt} />
                    </>
                  ) : (
                    "never expires"
                  )}
                </span>
                <code className="text-slate-500">{t.prefix}…</code>
                <span className="text-slate-500">
                  created <Time iso={t.createdAt} />
                </span>
                <span className="text-slate-500">
                  last used <Time iso={t.lastUsedAt} empty="never" />
                </span>
                <Button
                  variant="link"
                  onClick={async () => {
                    const ok = await confirm({
                      title: `Revoke token “${t.name}”?`,
                      message: (
                        <>
                          Every request with <strong>{t.name}</strong> (<code>{t.prefix}…</code>) is refused from now
                          on. This cannot be undone.
                        </>
                      ),
                      confirmLabel: "Revoke token",
                      variant: "danger",
                    });
                    if (ok) revoke.mutate(t);
                  }}
                  className="ml-auto text-red-700"
                  aria-label={`Revoke token ${t.name}`}
                >
                  Revoke
                </Button>
              </li>
            ))}
          </ul>
        ) : (
          <p className="px-5 py-4 text-sm text-slate-500">{tokens.isPending ? "Loading…" : "No tokens yet."}</p>
        )}
      </section>
    </div>
  );
}
