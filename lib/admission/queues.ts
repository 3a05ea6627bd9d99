/**
 * What the Queues page and `GET /api/v1/ops/queues` show: per queue, waiting,
 * admitted and running jobs, the pauses that apply, caps, and per-tenant
 * counts; and platform admins' settings: each queue's default cap and window
 * (`updateQueueSettings`), and per-tenant cap and weight overrides.
 * Operators see their own tenant only.
 *
 * Every setting lives in the database, so it holds across the whole fleet of
 * app and worker processes; a worker's QUEUE_* environment only seeds a new
 * database (`seedQueueSettings` in ./admitter).
 */
import { z } from "zod";
import { recordAudit } from "../audit";
import { requireOperator, requirePlatformAdmin, resolveTenantFor } from "../auth/authorize";
import type { Principal } from "../auth/principal";
import { db } from "../db";
import { AppError, notFound, parseOrThrow } from "../errors";
import { queueNames } from "../jobs/registry";
import type { QueueName } from "../jobs/task";
import { admitQueue, configuredQueues } from "./admitter";
import { listPauses, type PauseDto } from "./pauses";

type Counts = { waiting: number; scheduled: number; admitted: number; running: number };

export type QueueTenantDto = Counts & {
  tenant: { id: string; slug: string; name: string };
  /** The cap in force: the override, or the queue's default. */
  cap: number;
  capOverride: number | null;
  weight: number;
  /** Some active pause stops all of this tenant's work in this queue. */
  paused: boolean;
};

export type QueueDto = Counts & {
  name: QueueName;
  /** The default per-tenant cap. */
  tenantCap: number;
  /** Jobs of all tenants admitted or running at once. */
  window: number;
  /** The platform admin who last changed the default cap or window (null: still the environment's seed). */
  updatedBy: string | null;
  /** When they were set (seeded or changed); null: the migrations' defaults, not yet seeded by a worker. */
  configuredAt: string | null;
  /** A pause stops the whole queue (for every tenant, or for the caller's). */
  paused: boolean;
  /** Active pauses that touch this queue. */
  pauses: PauseDto[];
  tenants: QueueTenantDto[];
};

const zero = (): Counts => ({ waiting: 0, scheduled: 0, admitted: 0, running: 0 });

/** Per queue: counts, pauses, caps, and per-tenant counts. Operators (own tenant), platform admins (all). */
export async function getQueues(principal: Principal): Promise<{ queues: QueueDto[] }> {
  requireOperator(principal);
  const own = principal.isPlatformAdmin ? null : principal.tenantId;
  // Two index-only passes over the partial indexes admission uses (waiting; holding a slot).
  const [waiting, activeRows, settings, limits, pauses] = await Promise.all([
    db().$queryRaw<{ queue: string; tenantId: string; waiting: bigint; scheduled: bigint }[]>`
      SELECT queue, tenant_id AS "tenantId", count(*) FILTER (WHERE run_at <= now()) AS waiting,
             count(*) FILTER (WHERE run_at > now()) AS scheduled
      FROM jobs WHERE status IN ('queued', 'retrying') AND admitted_at IS NULL
        AND (${own}::uuid IS NULL OR tenant_id = ${own}::uuid)
      GROUP BY 1, 2`,
    db().$queryRaw<{ queue: string; tenantId: string; admitted: bigint; running: bigint }[]>`
      SELECT queue, tenant_id AS "tenantId", count(*) FILTER (WHERE status <> 'running') AS admitted,
             count(*) FILTER (WHERE status = 'running') AS running
      FROM jobs WHERE admitted_at IS NOT NULL AND status IN ('queued', 'retrying', 'running')
        AND (${own}::uuid IS NULL OR tenant_id = ${own}::uuid)
      GROUP BY 1, 2`,
    db().queueSetting.findMany(),
    db().tenantQueueLimit.findMany({ where: own ? { tenantId: own } : {} }),
    listPauses(principal),
  ]);
  const editors = await db().user.findMany({
    where: { id: { in: settings.flatMap((s) => (s.updatedById ? [s.updatedById] : [])) } },
    select: { id: true, email: true },
  });
  // Operators see their tenant. Admins see every tenant with work or an override,
  // and others up to 200 in all (to set a cap before the work arrives).
  const active = new Set([...waiting, ...activeRows, ...limits].map((r) => r.tenantId));
  const tenants = await db().tenant.findMany({
    where: own ? { id: own } : { id: { in: [...active] } },
    select: { id: true, slug: true, name: true },
  });
  if (!own && tenants.length < 200) {
    tenants.push(
      ...(await db().tenant.findMany({
        where: { id: { notIn: [...active] } },
        select: { id: true, slug: true, name: true },
        orderBy: { slug: "asc" },
        take: 200 - tenants.length,
      })),
    );
  }

  const queues = queueNames().map((name): QueueDto => {
    const setting = settings.find((s) => s.name === name);
    const tenantCap = setting?.tenantCap ?? 0;
    const queuePauses = pauses.filter((p) => p.queue === null || p.queue === name);
    const stopsAll = (tenantId: string | null) =>
      queuePauses.some((p) => p.type === null && (p.tenant === null || p.tenant.id === tenantId));
    const rows = tenants.map((tenant): QueueTenantDto => {
      const w = waiting.find((r) => r.queue === name && r.tenantId === tenant.id);
      const a = activeRows.find((r) => r.queue === name && r.tenantId === tenant.id);
      const limit = limits.find((l) => l.queue === name && l.tenantId === tenant.id);
      return {
        tenant,
        waiting: Number(w?.waiting ?? 0),
        scheduled: Number(w?.scheduled ?? 0),
        admitted: Number(a?.admitted ?? 0),
        running: Number(a?.running ?? 0),
        cap: limit?.maxRunning ?? tenantCap,
        capOverride: limit?.maxRunning ?? null,
        weight: limit?.weight ?? 1,
        paused: stopsAll(tenant.id),
      };
    });
    // Totals from every counted row, not only the tenants listed.
    const total = zero();
    for (const w of waiting.filter((r) => r.queue === name)) {
      total.waiting += Number(w.waiting);
      total.scheduled += Number(w.scheduled);
    }
    for (const a of activeRows.filter((r) => r.queue === name)) {
      total.admitted += Number(a.admitted);
      total.running += Number(a.running);
    }
    rows.sort((x, y) => y.running + y.waiting - (x.running + x.waiting) || x.tenant.slug.localeCompare(y.tenant.slug));
    return {
      name,
      tenantCap,
      window: setting?.window ?? 0,
      updatedBy: editors.find((u) => u.id === setting?.updatedById)?.email ?? null,
      configuredAt: setting?.configuredAt?.toISOString() ?? null,
      ...total,
      paused: queuePauses.some((p) => p.type === null && (p.tenant === null || p.tenant.id === own)),
      pauses: queuePauses,
      tenants: rows,
    };
  });
  return { queues };
}

export const tenantLimitSchema = z
  .object({
    /** Jobs of this tenant admitted or running at once in the queue; null: the queue's default. */
    maxRunning: z
      .number({ error: "must be a whole number or null" })
      .int("must be a whole number")
      .min(0, "must be at least 0")
      .max(100_000)
      .nullable()
      .default(null),
    /** Turns per round of the round-robin. */
    weight: z
      .number({ error: "must be a whole number" })
      .int("must be a whole number")
      .min(1, "must be at least 1")
      .max(100, "must be at most 100")
      .default(1),
  })
  .strict();

function parseQueue(raw: string): QueueName {
  if (!queueNames().includes(raw)) throw notFound("Queue not found");
  return raw as QueueName;
}

/** Sets (or with both defaults, clears) a tenant's cap and weight in a queue. Platform admins. */
export async function setTenantLimit(
  principal: Principal,
  rawQueue: string,
  tenantRef: string,
  body: unknown,
): Promise<{ queue: QueueName; tenantId: string; maxRunning: number | null; weight: number }> {
  requirePlatformAdmin(principal, "Changing a tenant's cap");
  const queue = parseQueue(rawQueue);
  const tenantId = (await resolveTenantFor(principal, tenantRef))!;
  const { maxRunning, weight } = parseOrThrow(tenantLimitSchema, body);
  await db().$transaction(async (tx) => {
    if (maxRunning === null && weight === 1) {
      await tx.tenantQueueLimit.deleteMany({ where: { tenantId, queue } });
    } else {
      await tx.tenantQueueLimit.upsert({
        where: { tenantId_queue: { tenantId, queue } },
        create: { tenantId, queue, maxRunning, weight, updatedById: principal.userId },
        update: { maxRunning, weight, updatedById: principal.userId },
      });
    }
    await recordAudit(
      principal,
      {
        action: "queue.limit",
        targetType: "tenant",
        targetIds: [tenantId],
        tenantId,
        details: { queue, maxRunning, weight },
      },
      tx,
    );
  });
  await admitQueue(queue); // a raised cap takes effect now
  return { queue, tenantId, maxRunning, weight };
}

/** Removes a tenant's override in a queue: the queue's defaults apply again. Platform admins. */
export async function clearTenantLimit(principal: Principal, rawQueue: string, tenantRef: string) {
  return setTenantLimit(principal, rawQueue, tenantRef, {});
}

/** The most a queue's default cap or window may be (as QUEUE_*_TENANT_CAP / QUEUE_*_WINDOW in lib/env.ts). */
export const QUEUE_SETTING_MAX = 100_000;

export const queueSettingsSchema = z
  .object({
    /** Jobs of one tenant admitted or running at once in the queue, unless the tenant has its own cap. */
    tenantCap: z
      .number({ error: "must be a whole number" })
      .int("must be a whole number")
      .min(0, "must be at least 0")
      .max(QUEUE_SETTING_MAX, `must be at most ${QUEUE_SETTING_MAX}`)
      .optional(),
    /** Jobs of all tenants admitted or running at once in the queue. */
    window: z
      .number({ error: "must be a whole number" })
      .int("must be a whole number")
      .min(1, "must be at least 1")
      .max(QUEUE_SETTING_MAX, `must be at most ${QUEUE_SETTING_MAX}`)
      .optional(),
  })
  .strict();
export type QueueSettingsInput = z.infer<typeof queueSettingsSchema>;

export type QueueSettingsDto = {
  name: QueueName;
  tenantCap: number;
  window: number;
  updatedBy: string | null;
  configuredAt: string | null;
};

/**
 * Changes a queue's default per-tenant cap and its window, for the whole fleet
 * (they live in `queues`; every admission, in any process, reads them).
 * Platform admins. 404 for an unknown queue, 400 naming the field for bad
 * values. Audited (`queue.settings`, with the values before and after).
 * A raised cap or window admits waiting work at once; a lowered one applies
 * as running and admitted jobs end (nothing admitted is taken back).
 */
export async function updateQueueSettings(
  principal: Principal,
  rawName: string,
  body: unknown,
): Promise<QueueSettingsDto> {
  requirePlatformAdmin(principal, "Changing a queue's cap or window");
  const name = parseQueue(rawName);
  const input = parseOrThrow(queueSettingsSchema, body);
  if (input.tenantCap === undefined && input.window === undefined) {
    throw new AppError("invalid_input", "Invalid input: tenantCap: give tenantCap, window or both", [
      { path: "tenantCap", message: "give tenantCap, window or both" },
    ]);
  }
  const updated = await db().$transaction(async (tx) => {
    // The row, locked: two admins' edits apply one after the other, each audited with what it replaced.
    const [before] = await tx.$queryRaw<{ tenantCap: number; window: number }[]>`
      SELECT tenant_cap AS "tenantCap", max_admitted AS "window" FROM queues WHERE name = ${name} FOR UPDATE`;
    const seed = configuredQueues().find((q) => q.name === name)!;
    const after = {
      tenantCap: input.tenantCap ?? before?.tenantCap ?? seed.tenantCap,
      window: input.window ?? before?.window ?? seed.window,
    };
    const row = await tx.queueSetting.upsert({
      where: { name },
      create: { name, ...after, configuredAt: new Date(), updatedById: principal.userId },
      update: { ...after, configuredAt: new Date(), updatedById: principal.userId },
    });
    await recordAudit(
      principal,
      {
        action: "queue.settings",
        targetType: "queue",
        targetIds: [name],
        tenantId: null,
        details: { queue: name, before: before ?? null, after },
      },
      tx,
    );
    return row;
  });
  await admitQueue(name); // a raised cap or window takes effect now
  return {
    name,
    tenantCap: updated.tenantCap,
    window: updated.window,
    updatedBy: principal.email,
    configuredAt: updated.configuredAt?.toISOString() ?? null,
  };
}
