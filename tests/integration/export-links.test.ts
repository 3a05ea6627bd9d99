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
const viaRoute = (token: string, accept?: string) =>
  linkRoute(new Request(`http://x/d/${token}`, accept ? { headers: { Accept: accept } } : {}), {
    params: Promise.resolve({ token }),
  });
/** What Chromium sends when a person opens a link. */
const BROWSER_ACCEPT =
  "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7";

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

  test("a browser gets a page saying what happened, with the same status; API clients keep the JSON", async () => {
    const id = await finishedExport();
    const revoked = await createExportLink(fx.p.ada, id, {});
    await revokeExportLink(fx.p.ada, id, revoked.id);
    const expired = await createExportLink(fx.p.ada, id, { ttlSeconds: 60 });
    await pool().query("UPDATE export_links SET expires_at = now() - interval '1 second' WHERE id = $1", [expired.id]);
    const cases = [
      { token: tokenOf(revoked.url!), status: 410, reason: "revoked", says: /was revoked/ },
      { token: tokenOf(expired.url!), status: 410, reason: "expired", says: /has expired/ },
      { token: "dl_never-made", status: 404, reason: "unknown", says: /does not work/ },
      { token: "not-even-a-link", status: 404, reason: "unknown", says: /does not work/ },
    ];
    for (const c of cases) {
      const page = await viaRoute(c.token, BROWSER_ACCEPT);
      assert.equal(page.status, c.status, c.reason);
      assert.match(page.headers.get("content-type")!, /^text\/html; charset=utf-8/);
      assert.equal(page.headers.get("referrer-policy"), "no-referrer", "the token in the URL leaks nowhere");
      const html = await page.text();
      assert.match(html, new RegExp(`data-reason="${c.reason}"`));
      assert.match(html, c.says);
      assert.match(html, /ask (the person who shared it|them)[^.]*new link/i, "it says what to do");
      assert.doesNotMatch(html, new RegExp(c.token), "the page does not repeat the token");
      for (const accept of [undefined, "*/*", "application/json", "application/json, text/html;q=0.5"]) {
        const api = await viaRoute(c.token, accept);
        assert.equal(api.status, c.status, `${c.reason} as JSON (${accept ?? "no Accept"})`);
        const body = (await api.json()) as { error: { code: string; details: { reason: string } } };
        assert.equal(body.error.code, c.status === 404 ? "not_found" : "gone");
        assert.equal(body.error.details.reason, c.reason);
      }
    }
    // A file that is gone (the export deleted) is a reason of its own; a working link still downloads in a browser.
    const live = await createExportLink(fx.p.ada, id, {});
    const ok = await viaRoute(tokenOf(live.url!), BROWSER_ACCEPT);
    assert.equal(ok.status, 200);
    assert.match(ok.headers.get("content-disposition")!, /attachment/);
    await ok.arrayBuffer();
    await deleteExport(fx.p.ada, id);
    const gone = await viaRoute(tokenOf(live.url!), BROWSER_ACCEPT);
    assert.equal(gone.status, 410);
    assert.match(await gone.text(), /data-reason="file_gone"[\s\S]*request the export again/);
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
    assert.deepEqual(r, { ran: true, files: 1, jobs: 1, parts: 0, staged: 0 });
    assert.equal((await getJob(fx.p.ada, id)).status, "expired");
    assert.equal((await getJob(fx.p.ada, keep)).status, "succeeded", "an unexpired export stays");
    assert.equal(await storage().open(file.storageKey), null);
    await assert.rejects(openLinkDownload(tokenOf(link.url!)), isCode("gone"));
    assert.deepEqual(
      await cleanupExpiredExports(),
      { ran: true, files: 0, jobs: 0, parts: 0, staged: 0 },
      "nothing twice",
    );
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
