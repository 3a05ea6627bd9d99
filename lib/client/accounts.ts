/** Browser-side fetchers for accounts: invitations, members, tenants, one's own password. */
import type { InviteDto, MemberDto } from "../auth/accounts";
import type { MaxPriorityName } from "../jobs/priority-names";
import type { TenantPriorityDto } from "../jobs/priority";
import type { TenantDto } from "../tenants/settings";
import { request } from "./api";

export type { InviteDto, MemberDto, TenantDto, TenantPriorityDto };

export const peopleKeys = {
  all: ["people"] as const,
  members: (tenant: string | null) => ["people", "members", tenant] as const,
  invites: (tenant: string | null) => ["people", "invites", tenant] as const,
  tenants: ["people", "tenants"] as const,
};

const q = (tenant: string | null) => (tenant ? `?tenant=${encodeURIComponent(tenant)}` : "");

export function fetchMembers(tenant: string | null): Promise<{ members: MemberDto[] }> {
  return request(`/api/v1/members${q(tenant)}`);
}

export function fetchInvites(tenant: string | null): Promise<{ invites: InviteDto[] }> {
  return request(`/api/v1/invites${q(tenant)}`);
}

export type InviteForm = { email: string; role?: "member" | "operator"; tenant?: string; platformAdmin?: boolean };

export function createInvite(body: InviteForm): Promise<InviteDto> {
  return request("/api/v1/invites", { method: "POST", body: JSON.stringify(body) });
}

export function revokeInvite(id: string): Promise<void> {
  return request(`/api/v1/invites/${encodeURIComponent(id)}`, { method: "DELETE" });
}

export function changeRole(userId: string, role: "member" | "operator", tenant: string | null): Promise<MemberDto> {
  return request(`/api/v1/members/${encodeURIComponent(userId)}`, {
    method: "PATCH",
    body: JSON.stringify({ role, ...(tenant ? { tenant } : {}) }),
  });
}

export function removeMember(userId: string, tenant: string | null): Promise<void> {
  return request(`/api/v1/members/${encodeURIComponent(userId)}${q(tenant)}`, { method: "DELETE" });
}

export function fetchTenants(): Promise<{ tenants: TenantDto[] }> {
  return request("/api/v1/ops/tenants");
}

export function createTenant(body: { slug: string; name: string }): Promise<TenantDto> {
  return request("/api/v1/ops/tenants", { method: "POST", body: JSON.stringify(body) });
}

export function changePassword(body: { currentPassword: string; newPassword: string }): Promise<void> {
  return request("/api/v1/account/password", { method: "POST", body: JSON.stringify(body) });
}

export function acceptInvite(body: { token: string; name?: string; password?: string }): Promise<{ email: string }> {
  return request("/api/v1/invites/accept", { method: "POST", body: JSON.stringify(body) });
}

/** A tenant's settings as a platform admin sets them; null puts one back to the platform default. */
export type TenantSettingsForm = Partial<{
  exportRetentionDays: number | null;
  jobRetentionDays: number | null;
  deadLetterRetentionDays: number | null;
  auditRetentionDays: number | null;
}>;

export function updateTenantSettings(tenant: string, body: TenantSettingsForm): Promise<TenantDto> {
  return request(`/api/v1/ops/tenants/${encodeURIComponent(tenant)}`, { method: "PATCH", body: JSON.stringify(body) });
}

export const priorityKeys = { tenant: (tenant: string) => ["tenant-priority", tenant] as const };

/** The highest priority a tenant's callers may ask for (a member: their own tenant). */
export function fetchTenantPriority(tenant: string): Promise<TenantPriorityDto> {
  return request(`/api/v1/ops/tenants/${encodeURIComponent(tenant)}/priority`);
}

/** Sets it: operators of the tenant, platform admins (audited). */
export function setTenantPriority(tenant: string, maxPriority: MaxPriorityName): Promise<TenantPriorityDto> {
  return request(`/api/v1/ops/tenants/${encodeURIComponent(tenant)}/priority`, {
    method: "PUT",
    body: JSON.stringify({ maxPriority }),
  });
}
