"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { usePathname, useSearchParams } from "next/navigation";
import { useState, type FormEvent } from "react";
import {
  changeRole,
  createInvite,
  createTenant,
  fetchInvites,
  fetchMembers,
  fetchTenants,
  peopleKeys,
  removeMember,
  revokeInvite,
  type InviteDto,
} from "@/lib/client/accounts";
import { ApiError } from "@/lib/client/api";
import { refetchAfterChange } from "@/lib/client/refresh";
import { Alert } from "./ui/alert";
import { Button } from "./ui/button";
import { useConfirm } from "./ui/confirm-dialog";
import { CopyButton } from "./ui/copy-button";
import { TenantPriorityForm } from "./tenant-priority-form";
import { TenantRetentionForm } from "./tenant-retention-form";
import { fieldClass, Select } from "./ui/select";
import { Time } from "./ui/time";

const card = "rounded-lg border border-slate-200 bg-white p-5 shadow-sm";

/** A message for a field of a failed form, tied to it by id. */
function FieldError({ error, path, id }: { error: unknown; path: string; id: string }) {
  const message = error instanceof ApiError ? error.fields.find((f) => f.path === path)?.message : undefined;
  return message ? (
    <span id={id} className="mt-1 block text-xs text-red-700">
      {message}
    </span>
  ) : null;
}

/**
 * The console's People page: a tenant's members and their roles, its
 * invitations, and the form that invites someone. Platform admins pick the
 * tenant, create tenants, set its retention and invite other platform admins.
 */
export function PeoplePanel({ isAdmin, ownTenant }: { isAdmin: boolean; ownTenant: string | null }) {
  const qc = useQueryClient();
  const { confirm, dialog } = useConfirm();
  const tenants = useQuery({ queryKey: peopleKeys.tenants, queryFn: fetchTenants, enabled: isAdmin });
  // A platform admin's tenant is in the URL (?tenant=slug): a link, a reload and Back keep it.
  const pathname = usePathname();
  const search = useSearchParams().toString();
  const [pending, setPending] = useState<{ from: string; to: string } | null>(null);
  if (pending && pending.from !== search) setPending(null);
  const picked = new URLSearchParams(pending ? pending.to : search).get("tenant");
  const tenant = isAdmin ? picked : ownTenant;
  const setTenant = (slug: string) => {
    const q = new URLSearchParams({ tenant: slug }).toString();
    setPending({ from: search, to: q });
    window.history.pushState(null, "", `${pathname}?${q}`);
  };
  const shown = tenant ?? (isAdmin ? (tenants.data?.tenants[0]?.slug ?? null) : ownTenant);
  const shownTenant = tenants.data?.tenants.find((t) => t.slug === shown);
  const members = useQuery({
    queryKey: peopleKeys.members(shown),
    queryFn: () => fetchMembers(isAdmin ? shown : null),
    enabled: Boolean(shown),
  });
  const invites = useQuery({
    queryKey: peopleKeys.invites(isAdmin ? shown : null),
    queryFn: () => fetchInvites(isAdmin ? shown : null),
  });
  const refresh = () => void refetchAfterChange(qc, peopleKeys.all);
  const [created, setCreated] = useState<InviteDto | null>(null);
  const invite = useMutation({
    mutationFn: createInvite,
    onSuccess: (i) => {
      setCreated(i);
      refresh();
    },
  });
  const role = useMutation({
    mutationFn: (v: { userId: string; role: "member" | "operator" }) =>
      changeRole(v.userId, v.role, isAdmin ? shown : null),
    onSuccess: refresh,
  });
  const remove = useMutation({
    mutationFn: (userId: string) => removeMember(userId, isAdmin ? shown : null),
    onSuccess: refresh,
  });
  const revoke = useMutation({ mutationFn: revokeInvite, onSuccess: refresh });
  const newTenant = useMutation({
    mutationFn: createTenant,
    onSuccess: (t) => {
      setTenant(t.slug);
      refresh();
    },
  });
  const error = role.error ?? remove.error ?? revoke.error;

  const onInvite = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = e.currentTarget;
    const f = new FormData(form);
    const asAdmin = f.get("platformAdmin") === "on";
    // Emptied once sent, ready for the next person; kept as typed when refused, to correct it.
    invite.mutate(
      {
        email: String(f.get("email") ?? ""),
        ...(asAdmin
          ? { platformAdmin: true }
          : { role: String(f.get("role")) as "member" | "operator", ...(isAdmin && shown ? { tenant: shown } : {}) }),
      },
      { onSuccess: () => form.reset() },
    );
  };
  const onTenant = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = e.currentTarget;
    const f = new FormData(form);
    newTenant.mutate(
      { slug: String(f.get("slug") ?? ""), name: String(f.get("name") ?? "") },
      { onSuccess: () => form.reset() },
    );
  };

  return (
    <div className="space-y-6">
      {dialog}
      {isAdmin && (
        <div className="flex flex-wrap items-end gap-4">
          <Select
            label="Tenant"
            value={shown ?? ""}
            onChange={(e) => setTenant(e.target.value)}
            options={(tenants.data?.tenants ?? []).map((t) => [t.slug, t.name] as const)}
          />
          <form onSubmit={onTenant} aria-label="Create a tenant" className="flex flex-wrap items-end gap-2">
            <label className="text-sm font-medium">
              New tenant: slug
              <input
                name="slug"
                required
                pattern="[a-z0-9][a-z0-9-]{1,38}[a-z0-9]"
                className={fieldClass}
                aria-describedby="tenant-slug-error"
              />
              <FieldError error={newTenant.error} path="slug" id="tenant-slug-error" />
            </label>
            <label className="text-sm font-medium">
              Name
              <input name="name" required maxLength={200} className={fieldClass} />
            </label>
            <Button type="submit" disabled={newTenant.isPending}>
              Create tenant
            </Button>
          </form>
        </div>
      )}
      {newTenant.error && !(newTenant.error instanceof ApiError && newTenant.error.fields.length) && (
        <Alert tone="error">{newTenant.error.message}</Alert>
      )}
      {isAdmin && shownTenant && <TenantRetentionForm key={shownTenant.id} tenant={shownTenant} />}
      {shown && <TenantPriorityForm key={shown} tenant={shown} />}

      <form onSubmit={onInvite} aria-label="Invite someone" className={`${card} flex flex-wrap items-end gap-3`}>
        <h2 className="w-full text-lg font-semibold">Invite someone{shown ? ` to ${shown}` : ""}</h2>
        <label className="min-w-56 flex-1 text-sm font-medium">
          E-mail
          <input
            name="email"
            type="email"
            required
            maxLength={320}
            className={fieldClass}
            aria-describedby="invite-email-error"
          />
          <FieldError error={invite.error} path="email" id="invite-email-error" />
        </label>
        <Select
          label="Role"
          name="role"
          defaultValue="member"
          options={[
            ["member", "member: requests exports, follows its jobs"],
            ["operator", "operator: also runs the console"],
          ]}
        />
        {isAdmin && (
          <label className="flex items-center gap-2 self-end text-sm">
            <input name="platformAdmin" type="checkbox" /> a platform admin (no tenant)
          </label>
        )}
        <Button type="submit" variant="primary" size="md" disabled={invite.isPending}>
          Invite
        </Button>
      </form>
      {invite.error && !(invite.error instanceof ApiError && invite.error.fields.length) && (
        <Alert tone="error">{invite.error.message}</Alert>
      )}
      {created?.link && (
        <Alert tone="success" title={`Invitation for ${created.email}`}>
          <p>
            {created.mailed ? "It was e-mailed. " : "No mail is sent from this server: send this link yourself. "}
            It works once, until <Time iso={created.expiresAt} mode="absolute" />.
          </p>
          <code data-testid="invite-link" className="mt-2 block break-all font-mono text-xs">
            {created.link}
          </code>
          <CopyButton text={created.link} label="Copy link" className="mt-2" />
        </Alert>
      )}
      {error && <Alert tone="error">{error.message}</Alert>}

      <section aria-label="Members" className={card}>
        <h2 className="mb-3 text-lg font-semibold">Members</h2>
        {members.isPending && shown && <p className="text-sm text-slate-500">Loading…</p>}
        {members.isError && <Alert tone="error">Could not load the members: {members.error.message}</Alert>}
        {members.data?.members.length === 0 && <p className="text-sm text-slate-600">Nobody yet.</p>}
        <ul className="divide-y divide-slate-100">
          {members.data?.members.map((m) => (
            <li key={m.userId} data-testid="member" className="flex flex-wrap items-center gap-3 py-2 text-sm">
              <span className="font-medium">{m.name}</span>
              <span className="break-all text-slate-600">{m.email}</span>
              <span className="rounded bg-slate-100 px-2 py-0.5 text-xs" data-testid="member-role">
                {m.role}
              </span>
              <span className="ml-auto flex gap-2">
                <Button
                  onClick={() => role.mutate({ userId: m.userId, role: m.role === "operator" ? "member" : "operator" })}
                  disabled={role.isPending}
                  aria-label={`Make ${m.email} ${m.role === "operator" ? "a member" : "an operator"}`}
                >
                  {m.role === "operator" ? "Make member" : "Make operator"}
                </Button>
                <Button
                  variant="danger"
                  disabled={remove.isPending}
                  aria-label={`Remove ${m.email}`}
                  onClick={async () => {
                    const ok = await confirm({
                      title: `Remove ${m.email}?`,
                      message: "They lose access to this tenant at once; their API tokens for it are revoked.",
                      confirmLabel: "Remove",
                      variant: "danger",
                    });
                    if (ok) remove.mutate(m.userId);
                  }}
                >
                  Remove
                </Button>
              </span>
            </li>
          ))}
        </ul>
      </section>

      <section aria-label="Invitations" className={card}>
        <h2 className="mb-3 text-lg font-semibold">Invitations</h2>
        {invites.isPending && <p className="text-sm text-slate-500">Loading…</p>}
        {invites.isError && <Alert tone="error">Could not load the invitations: {invites.error.message}</Alert>}
        {invites.data?.invites.length === 0 && <p className="text-sm text-slate-600">No invitations.</p>}
        <ul className="divide-y divide-slate-100">
          {invites.data?.invites.map((i) => (
            <li key={i.id} data-testid="invite" className="flex flex-wrap items-center gap-3 py-2 text-sm">
              <span className="break-all font-medium">{i.email}</span>
              <span className="text-slate-600">
                {i.platformAdmin ? "platform admin" : `${i.role} of ${i.tenant?.slug ?? "?"}`}
              </span>
              <span data-testid="invite-state">{i.state}</span>
              <span className="text-slate-600">
                by {i.createdBy ?? "the command line"}, <Time iso={i.createdAt} mode="absolute" />
              </span>
              {i.state === "pending" && (
                <Button
                  variant="link"
                  className="ml-auto text-red-700"
                  onClick={async () => {
                    const ok = await confirm({
                      title: `Revoke the invitation of ${i.email}?`,
                      message: "Its link stops working at once.",
                      confirmLabel: "Revoke invitation",
                      variant: "danger",
                    });
                    if (ok) revoke.mutate(i.id);
                  }}
                >
                  Revoke
                </Button>
              )}
            </li>
          ))}
        </ul>
      </section>
    </div>
  );
}
