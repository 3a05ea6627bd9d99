import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { buffer } from "node:stream/consumers";
import { GET as linkRoute } from "@/app/d/[token]/route";
import { db, pool } from "@/lib/db";
import { AppError } from "@/lib/errors";
import {
  cleanupExpiredExports,
  createExportLink,
  deleteExport,
  listExportLinks,
  openLinkDownload,
  revokeExportLink,
} from "@/lib/exports/links";
import { openExportDownload, requestExport } from "@/lib/exports/service";
import { getJob } from "@/lib/jobs/queries";
import { updateTenantSettings } from "@/lib/tenants/settings";
import { storage } from "@/lib/storage";
import { useTestDatabase } from "../helpers/db";
import { drainJobs, isCode } from "../helpers/fixtures";

const fx = useTestDatabase();

async function finishedExport(): Promise<string> {
  const { job } = await requestExport(fx.p.ada, { dataset: "customers", format: "csv" });
  await drainJobs();
  assert.equal((await getJob(fx.p.ada, job.id)).status, "succeeded");
  return job.id;
}

const tokenOf = (url: string) => url.replace(/^\/d\//, "");
const viaRoute = (token: string) =>
  linkRoute(new Request(`http://x/d/${token}`), { params: Promise.resolve({ token }) });

describe("download links and expiry", () => {
  test("a link downloads the file without signing in, counts, and is for its tenant only", async () => {
    const id = await finishedExport();
    const link = await createExportLink(fx.p.ada, id, {});
    assert.match(link.url!, /^\/d\/dl_[A-Za-z0-9_-]{43}$/);
    const ttl = new Date(link.expiresAt).getTime() - Date.now();
    assert.ok(ttl > 14 * 60_000 && ttl <= 15 * 60_000, "15 minutes by default");

    const direct = await buffer((await openExportDownload(fx.p.ada, id)).stream);
    const res = await viaRoute(tokenOf(link.url!));
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-disposition")!, /attachment; filename="customers-/);
    assert.deepEqual(Buffer.from(await res.arrayBuffer()), direct);
    const [listed] = await listExportLinks(fx.p.ada, id);
    assert.equal(listed!.downloadCount, 1);
    assert.equal((await getJob(fx.p.ada, id)).result!.files[0]!.downloadCount, 2, "both downloads counted on the file");

    await assert.rejects(createExportLink(fx.p.gus, id, {}), isCode("not_found"), "another tenant's export is 404");
    await assert.rejects(revokeExportLink(fx.p.gus, id, listed!.id), isCode("not_found"));
    await assert.rejects(listExportLinks(fx.p.gus, id), isCode("not_found"));
    assert.equal((await viaRoute("dl_never-made")).status, 404);
    assert.equal((await viaRoute("../../etc/passwd")).status, 404);
    await assert.rejects(createExportLink(fx.p.ada, id, { ttlSeconds: 5 }), (e: unknown) => {
      assert.ok(e instanceof AppError && e.code === "invalid_input" && e.fields?.[0]?.path === "ttlSeconds");
      return true;
    });
  });

  test("revoked and expired links answer 410, never a file", async () => {
    const id = await finishedExport();
    const revoked = await createExportLink(fx.p.ada, id, {});
    await revokeExportLink(fx.p.ada, id, revoked.id);
    assert.equal((await viaRoute(tokenOf(revoked.url!))).status, 410);

    const short = await createExportLink(fx.p.ada, id, { ttlSeconds: 60 });
    await pool().query("UPDATE export_links SET expires_at = now() - interval '1 second' WHERE id = $1", [short.id]);
    const res = await viaRoute(tokenOf(short.url!));
    assert.equal(res.status, 410);
    assert.match(((await res.json()) as { error: { message: string } }).error.message, /expired/);
    const audit = await db().auditLog.findMany({ where: { targetIds: { has: id } }, select: { action: true } });
    assert.deepEqual(audit.map((a) => a.action).sort(), ["export.link", "export.link", "export.link_revoke"]);
  });

  test("deleting an export early removes its file; the job shows expired; its links answer 410", async () => {
    const id = await finishedExport();
    const link = await createExportLink(fx.p.ada, id, {});
    const key = (await db().exportFile.findFirstOrThrow({ where: { jobId: id } })).storageKey;
    await assert.rejects(deleteExport(fx.p.gus, id), isCode("not_found"));
    await deleteExport(fx.p.ada, id);
    assert.equal((await getJob(fx.p.ada, id)).status, "expired");
    assert.equal(await storage().open(key), null, "the bytes are gone");
    await assert.rejects(openExportDownload(fx.p.ada, id), isCode("gone"));
    assert.equal((await viaRoute(tokenOf(link.url!))).status, 410);
    await assert.rejects(deleteExport(fx.p.ada, id), isCode("gone"));
    await assert.rejects(createExportLink(fx.p.ada, id, {}), isCode("gone"));
  });

  test("the cleanup deletes expired files and marks their exports expired", async () => {
    const id = await finishedExport();
    const keep = await finishedExport();
    const link = await createExportLink(fx.p.ada, id, {});
    const file = await db().exportFile.findFirstOrThrow({ where: { jobId: id } });
    await pool().query("UPDATE export_files SET expires_at = now() - interval '1 second' WHERE id = $1", [file.id]);
    const r = await cleanupExpiredExports();
    assert.deepEqual(r, { ran: true, files: 1, jobs: 1, parts: 0 });
    assert.equal((await getJob(fx.p.ada, id)).status, "expired");
    assert.equal((await getJob(fx.p.ada, keep)).status, "succeeded", "an unexpired export stays");
    assert.equal(await storage().open(file.storageKey), null);
    await assert.rejects(openLinkDownload(tokenOf(link.url!)), isCode("gone"));
    assert.deepEqual(await cleanupExpiredExports(), { ran: true, files: 0, jobs: 0, parts: 0 }, "nothing twice");
  });

  test("a tenant's own retention applies to its new exports; platform admins set it", async () => {
    await assert.rejects(updateTenantSettings(fx.p.oscar, "acme", { exportRetentionDays: 30 }), isCode("forbidden"));
    await assert.rejects(updateTenantSettings(fx.p.root, "acme", { exportRetentionDays: 0 }), (e: unknown) => {
      assert.ok(e instanceof AppError && e.fields?.[0]?.path === "exportRetentionDays");
      return true;
    });
    const set = await updateTenantSettings(fx.p.root, "acme", { exportRetentionDays: 30 });
    assert.deepEqual([set.exportRetentionDays, set.effectiveRetentionDays], [30, 30]);
    const id = await finishedExport();
    const file = await db().exportFile.findFirstOrThrow({ where: { jobId: id } });
    const days = (file.expiresAt.getTime() - Date.now()) / 86_400_000;
    assert.ok(days > 29.9 && days <= 30, `kept ${days.toFixed(2)} days`);
    const reset = await updateTenantSettings(fx.p.root, "acme", { exportRetentionDays: null });
    assert.equal(reset.effectiveRetentionDays, 7, "back to EXPORT_RETENTION_DAYS");
  });
});
