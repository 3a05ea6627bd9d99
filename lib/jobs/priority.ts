/**
 * Caller priorities: the one place that maps `low | normal | high` to `jobs.priority`
 * (lower runs first) and back, checks a requested priority against its tenant's maximum,
 * and lets an operator set that maximum.
 *
 * What a priority does (lib/admission, `conveyor_admit`): it orders one tenant's waiting jobs
 * — a tenant's next admitted job is its first by (priority, run_at, id) — and nothing else.
 * Which tenant gets the next slot is the round-robin's (start-time fair queueing), blind to
 * priorities; and graphile-worker gets every admitted job at one priority, so its fetch
 * order is admission's order and a high job of one tenant never overtakes another tenant's
 * admitted turn.
 */
import { z } from "zod";
import { recordAudit } from "../audit";
import { isOperator, resolveTenantFor } from "../auth/authorize";
import type { Principal } from "../auth/principal";
import { db } from "../db";
import { AppError, parseOrThrow } from "../errors";
import {
  maxPriorityNames,
  priorityField,
  priorityNames,
  priorityValue,
  type MaxPriorityName,
  type PriorityName,
} from "./priority-names";

export {
  maxPriorityNames,
  priorityField,
  priorityName,
  priorityNames,
  priorityValue,
  type MaxPriorityName,
  type PriorityName,
} from "./priority-names";

/**
 * Splits `priority` off a create body (the rest is the job's input, checked by its task's schema):
 * a body without it is `normal`. 400 naming `priority` for anything but the three names.
 */
export function splitPriority(body: unknown): { rest: unknown; priority: PriorityName } {
  if (!body || typeof body !== "object" || Array.isArray(body) || !("priority" in body)) {
    return { rest: body, priority: "normal" };
  }
  const { priority, ...rest } = body as Record<string, unknown>;
  if (priority === undefined || priority === null) return { rest, priority: "normal" };
  return { rest, priority: parseOrThrow(priorityField, priority, "priority") };
}

/**
 * The `jobs.priority` a caller of `tenantId` may ask for: `low` and `normal` always; `high` only
 * where the tenant's maximum is `high` (one read, and only then: the default path costs nothing).
 * Above the maximum: 400 naming `priority`, never silently lowered.
 */
export async function allowedPriority(tenantId: string, name: PriorityName): Promise<number> {
  if (name === "high") {
    const max = await tenantMaxPriority(tenantId);
    if (max !== "high") {
      const message = `high is above this tenant's maximum priority (${max}); an operator can raise it`;
      throw new AppError("invalid_input", `Invalid input: priority: ${message}`, [{ path: "priority", message }]);
    }
  }
  return priorityValue(name);
}

async function tenantMaxPriority(tenantId: string): Promise<MaxPriorityName> {
  const tenant = await db().tenant.findUnique({ where: { id: tenantId }, select: { maxPriority: true } });
  return (tenant?.maxPriority as MaxPriorityName | undefined) ?? "normal";
}

export type TenantPriorityDto = {
  tenant: { id: string; slug: string };
  /** The highest priority the tenant's callers may ask for. */
  maxPriority: MaxPriorityName;
  /** What a create may say, in order. */
  allowed: PriorityName[];
};

function toDto(t: { id: string; slug: string; maxPriority: string }): TenantPriorityDto {
  const max = t.maxPriority as MaxPriorityName;
  return {
    tenant: { id: t.id, slug: t.slug },
    maxPriority: max,
    allowed: max === "high" ? [...priorityNames] : ["low", "normal"],
  };
}

/** A tenant's maximum priority: any member for their own tenant (the create form's choices), platform admins any tenant. */
export async function getTenantPriority(principal: Principal, ref: string | null): Promise<TenantPriorityDto> {
  const id = await resolveTenantFor(principal, ref);
  if (!id)
    throw new AppError("invalid_input", "Invalid input: tenant: name a tenant", [
      { path: "tenant", message: "name a tenant" },
    ]);
  return toDto(
    await db().tenant.findUniqueOrThrow({ where: { id }, select: { id: true, slug: true, maxPriority: true } }),
  );
}

export const tenantPrioritySchema = z
  .object({ maxPriority: z.enum(maxPriorityNames, { error: `must be one of ${maxPriorityNames.join(", ")}` }) })
  .strict();

/**
 * Sets the highest priority a tenant's callers may ask for. Operators for their own tenant (another
 * tenant answers 404), platform admins for any; audited. Jobs already waiting keep their priority.
 */
export async function setTenantPriority(principal: Principal, ref: string, body: unknown): Promise<TenantPriorityDto> {
  if (!isOperator(principal))
    throw new AppError("forbidden", "Setting a tenant's maximum priority needs the operator role");
  const id = (await resolveTenantFor(principal, ref))!;
  const { maxPriority } = parseOrThrow(tenantPrioritySchema, body);
  return db().$transaction(async (tx) => {
    const before = await tx.tenant.findUniqueOrThrow({ where: { id }, select: { maxPriority: true } });
    const tenant = await tx.tenant.update({
      where: { id },
      data: { maxPriority },
      select: { id: true, slug: true, maxPriority: true },
    });
    await recordAudit(
      principal,
      {
        action: "tenant.max_priority",
        targetType: "tenant",
        targetIds: [id],
        tenantId: id,
        details: { from: before.maxPriority, to: maxPriority },
      },
      tx,
    );
    return toDto(tenant);
  });
}

/**
 * `priority` in a create body's OpenAPI description (the body's schema has no such field: the
 * service splits it off with `splitPriority` before the task's schema sees the rest).
 */
export const priorityProperty = {
  type: "string",
  enum: [...priorityNames],
  default: "normal",
  description:
    "Orders this job among its tenant's waiting jobs (high first); never ahead of other tenants' turns. " +
    "high only where the tenant's maximum allows it (else 400 naming priority)",
};

/** A `.meta({ override })` that adds `priority` to a create body's JSON Schema. */
export function addPriorityProperty({ jsonSchema }: { jsonSchema: { properties?: Record<string, unknown> } }): void {
  (jsonSchema.properties ??= {}).priority = priorityProperty;
}
