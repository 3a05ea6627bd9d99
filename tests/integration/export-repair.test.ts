/**
 * Repairing a split export (issue 35), through the public API: a part that ends dead fails its
 * export with a partial zip; replaying that part (or the export) makes a repair — a new job
 * linked to the export — that runs only the dead part again, adopts the finished parts' files,
 * and assembles a complete archive that replaces the partial one: the manifest and checksums are
 * the complete archive's, the export's download and its links give the new file, and an audit
 * entry on the export says it was repaired. A repair that dies again is repaired in turn.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { POST as createExport } from "@/app/api/v1/exports/route";
import { GET as downloadRoute } from "@/app/api/v1/exports/[id]/download/route";
import { POST as createLinkRoute } from "@/app/api/v1/exports/[id]/links/route";
import { GET as jobRoute } from "@/app/api/v1/jobs/[id]/route";
import { POST as replayRoute } from "@/app/api/v1/jobs/[id]/replay/route";
import { GET as linkRoute } from "@/app/d/[token]/route";
import { createPause, resumePause } from "@/lib/admission/pauses";
import { createApiTokenForEmail } from "@/lib/auth/tokens";
import { db, pool } from "@/lib/db";
import { cleanupExpiredExports } from "@/lib/exports/links";
import type { PartResult } from "@/lib/exports/parts";
import { repairCheckpoint } from "@/lib/exports/repair";
import type { JobDto } from "@/lib/jobs/dto";
import { storage } from "@/lib/storage";
import { useTestDatabase } from "../helpers/db";
import { drainJobs } from "../helpers/fixtures";
import { unzip } from "../helpers/zip";

const fx = useTestDatabase();

type Manifest = {
  export: string;
  rowCount: number;
  partial: boolean;
  snapshot: { lastId: string };
  repair?: { of: string; adopted: number[]; rerun: number[] };
  files: { name: string; part: number; rows: number; size: number; sha256: string }[];
  missingParts: { part: number; status: string }[];
};

const bearer = (token: string, init: RequestInit = {}) => ({
  ...init,
  headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
});
const api = {
  export: (token: string, body: unknown) =>
    createExport(
      new Request("http://test/api/v1/exports", bearer(token, { method: "POST", body: JSON.stringify(body) })),
      {
        params: Promise.resolve({}),
      },
    ),
  job: (token: string, id: string) =>
    jobRoute(new Request(`http://test/api/v1/jobs/${id}`, bearer(token)), { params: Promise.resolve({ id }) }),
  replay: (token: string, id: string) =>
    replayRoute(new Request(`http://test/api/v1/jobs/${id}/replay`, bearer(token, { method: "POST" })), {
      params: Promise.resolve({ id }),
    }),
  download: (token: string, id: string) =>
    downloadRoute(new Request(`http://test/api/v1/exports/${id}/download`, bearer(token)), {
      params: Promise.resolve({ id }),
    }),
  link: (token: string, id: string) =>
    createLinkRoute(
      new Request(`http://test/api/v1/exports/${id}/links`, bearer(token, { method: "POST", body: "{}" })),
      { params: Promise.resolve({ id }) },
    ),
  follow: (url: string) => {
    const token = url.split("/").pop()!;
    return linkRoute(new Request(`http://test${url}`), { params: Promise.resolve({ token }) });
  },
};

const sha256 = (b: Buffer) => createHash("sha256").update(b).digest("hex");

async function zipOf(res: Response) {
  if (res.status !== 200) assert.fail(`${res.status}: ${await res.text()}`);
  const bytes = Buffer.from(await res.arrayBuffer());
  const entries = await unzip(bytes);
  const manifest = JSON.parse(entries.get("manifest.json")!.toString()) as Manifest;
  return { bytes, entries, manifest };
}

/** An export's parts (with their attempts), in part order. */
const partsOf = async (id: string) =>
  (await db().job.findMany({ where: { parentId: id }, include: { attemptsHistory: true } })).sort(
    (a, b) => (a.input as { part: number }).part - (b.input as { part: number }).part,
  );

/** Holds Acme's export parts: the export plans and waits, its parts stay queued. */
const holdParts = () => createPause(fx.p.oscar, { queue: "bulk", type: "export_part", reason: "export-repair test" });

/** Part `n` of export `id` cannot run: its input names no dataset any more (a permanent failure). */
const breakPart = (id: string, n: number) =>
  pool().query(
    `UPDATE jobs SET input = jsonb_set(input, '{request,dataset}', '"gone"') WHERE parent_id = $1 AND (input->>'part')::int = $2`,
    [id, n],
  );

/** Requests a split export (4 parts) through the API, with part `dead` of it dying. */
async function exportWithDeadPart(token: string, dead: number): Promise<string> {
  const pause = await holdParts();
  const res = await api.export(token, { dataset: "events", format: "csv", partRows: 2500 });
  assert.equal(res.status, 202);
  const { id } = (await res.json()) as JobDto;
  await drainJobs();
  assert.equal((await partsOf(id)).length, 4);
  await breakPart(id, dead);
  await resumePause(fx.p.oscar, pause.id);
  await drainJobs();
  return id;
}

describe("repairing a split export", () => {
  test("replaying a dead part repairs its export: only that part runs again, and the complete archive replaces the partial one", async () => {
    const ada = await createApiTokenForEmail("ada@acme.test", "repair test");
    const oscar = await createApiTokenForEmail("oscar@acme.test", "repair test");
    const gina = await createApiTokenForEmail("gina@globex.test", "repair test");
    const id = await exportWithDeadPart(ada, 3);

    const failed = (await (await api.job(ada, id)).json()) as JobDto;
    assert.equal(failed.status, "failed");
    assert.match(failed.error!.message, /^1 of 4 parts failed \(part 3: /);
    assert.equal(failed.result?.files[0]?.partial, true);
    const partial = await zipOf(await api.download(ada, id));
    assert.equal(partial.manifest.partial, true);
    assert.deepEqual(
      partial.manifest.files.map((f) => f.part),
      [1, 2, 4],
    );
    // The member shares the partial file; the link will lead to the complete archive.
    const link = (await (await api.link(ada, id)).json()) as { url: string };
    const parts = await partsOf(id);
    const dead = parts[2]!;
    assert.equal(dead.status, "failed");

    // Who may repair: operators of the tenant; a member is refused, another tenant's part is not found.
    assert.equal((await api.replay(ada, dead.id)).status, 403);
    assert.equal((await api.replay(gina, dead.id)).status, 404);
    assert.equal((await api.replay(oscar, parts[0]!.id)).status, 409, "a finished part is not replayed");

    const res = await api.replay(oscar, dead.id);
    assert.equal(res.status, 201);
    const repair = (await res.json()) as JobDto;
    assert.equal(repair.type, "export");
    assert.equal(repair.replayOfId, id, "a new job linked to the export it repairs, not the export reopened");
    assert.equal((await api.replay(oscar, dead.id)).status, 409, "an export is repaired once");
    assert.equal((await api.replay(oscar, id)).status, 409, "…through its part or itself");
    const audit = await db().auditLog.findFirstOrThrow({ where: { action: "job.replay", targetIds: { has: id } } });
    assert.deepEqual(audit.details, { replayId: repair.id, via: dead.id });

    // The cleanup keeps the finished parts' files while the repair may adopt them.
    await cleanupExpiredExports();
    for (const p of [parts[0]!, parts[1]!, parts[3]!]) {
      assert.ok(await storage().open((p.result as PartResult).key), `part ${(p.input as { part: number }).part} kept`);
    }

    await drainJobs();
    const repaired = (await (await api.job(ada, repair.id)).json()) as JobDto;
    assert.equal(repaired.status, "succeeded", repaired.error?.message);
    const rerun = await partsOf(repair.id);
    assert.deepEqual(
      rerun.map((p) => (p.input as { part: number }).part),
      [3],
      "only the dead part ran again",
    );
    assert.equal(rerun[0]!.childIndex, 2, "in its place among the export's parts");
    for (const p of await partsOf(id)) assert.equal(p.attemptsHistory.length, 1, "no part of the export ran again");

    // The complete archive: every part, checksums that match, the rows the export's snapshot holds.
    const complete = await zipOf(await api.download(ada, repair.id));
    const { rows } = await pool().query<{ n: number }>(
      "SELECT count(*)::int AS n FROM events WHERE tenant_id = $1 AND id <= $2",
      [fx.p.acmeId, complete.manifest.snapshot.lastId],
    );
    assert.equal(complete.manifest.partial, false);
    assert.equal(complete.manifest.rowCount, rows[0]!.n);
    assert.equal(complete.manifest.snapshot.lastId, partial.manifest.snapshot.lastId, "the export's own snapshot");
    assert.deepEqual(complete.manifest.repair, { of: id, adopted: [1, 2, 4], rerun: [3] });
    assert.deepEqual(
      complete.manifest.files.map((f) => f.part),
      [1, 2, 3, 4],
    );
    assert.deepEqual(complete.manifest.missingParts, []);
    for (const f of complete.manifest.files) {
      const bytes = complete.entries.get(f.name)!;
      assert.equal(sha256(bytes), f.sha256, `${f.name}'s sha256`);
      assert.equal(bytes.length, f.size);
      const adopted = partial.manifest.files.find((p) => p.part === f.part);
      if (adopted) assert.equal(f.sha256, adopted.sha256, `part ${f.part} adopted as it was`);
    }
    assert.equal(sha256(complete.bytes), repaired.result!.files[0]!.sha256, "the archive's recorded checksum");

    // The partial file is replaced: the export's download and its link give the complete archive.
    const old = (await (await api.job(ada, id)).json()) as JobDto;
    assert.equal(old.status, "failed", "the export's history stays as it ended");
    assert.equal(old.result!.files[0]!.replacedBy, repaired.result!.files[0]!.id);
    assert.equal(sha256((await zipOf(await api.download(ada, id))).bytes), sha256(complete.bytes));
    assert.equal(sha256((await zipOf(await api.follow(link.url))).bytes), sha256(complete.bytes));
    // The member is told: an entry on the export's record says it was repaired, and by what.
    const told = await db().auditLog.findFirstOrThrow({ where: { action: "export.repaired", targetIds: { has: id } } });
    assert.equal(told.actorUserId, fx.p.oscar.userId, "who asked for the repair");
    assert.deepEqual((told.details as { repairedBy: string; adoptedParts: number[] }).repairedBy, repair.id);
    assert.equal((told.details as { linksMoved: number }).linksMoved, 1);

    // The cleanup then removes the partial's bytes and the parts' files; the complete archive stays.
    const partialKey = (await db().exportFile.findFirstOrThrow({ where: { jobId: id } })).storageKey;
    await cleanupExpiredExports();
    assert.equal(await storage().open(partialKey), null, "the partial file's bytes are gone");
    for (const p of [...(await partsOf(id)), ...rerun]) {
      if (p.status === "succeeded") assert.equal(await storage().open((p.result as PartResult).key), null);
    }
    assert.equal(sha256((await zipOf(await api.download(ada, id))).bytes), sha256(complete.bytes));
  });

  test("a finished part whose file is gone runs again, and a repair that dies again is repaired in turn", async () => {
    // An export planned before repairs existed has no exportId in its checkpoint: it replays from the start.
    assert.equal(repairCheckpoint({ phase: "parts", parts: 4, snapshot: { lastId: "9", takenAt: "" } }), null);
    const ada = await createApiTokenForEmail("ada@acme.test", "repair test 2");
    const oscar = await createApiTokenForEmail("oscar@acme.test", "repair test 2");
    const id = await exportWithDeadPart(ada, 2);
    const parts = await partsOf(id);
    await storage().delete((parts[0]!.result as PartResult).key);

    // The first repair's rerun of part 2 dies again.
    const pause = await holdParts();
    const first = (await (await api.replay(oscar, id)).json()) as JobDto;
    await drainJobs();
    assert.deepEqual(
      (await partsOf(first.id)).map((p) => (p.input as { part: number }).part),
      [1, 2],
      "part 1 (its file gone) and part 2 (dead) run again",
    );
    await breakPart(first.id, 2);
    await resumePause(fx.p.oscar, pause.id);
    await drainJobs();
    const failedAgain = (await (await api.job(ada, first.id)).json()) as JobDto;
    assert.equal(failedAgain.status, "failed");
    assert.match(failedAgain.error!.message, /^1 of 4 parts failed \(part 2: /);
    const stillPartial = await zipOf(await api.download(ada, first.id));
    assert.deepEqual(stillPartial.manifest.repair, { of: id, adopted: [3, 4], rerun: [1, 2] });
    assert.equal(
      ((await (await api.job(ada, id)).json()) as JobDto).result!.files[0]!.replacedBy,
      null,
      "a partial repair replaces nothing",
    );
    await cleanupExpiredExports(); // the adopted parts' files stay: the export still offers its partial file

    const second = (await (await api.replay(oscar, first.id)).json()) as JobDto;
    await drainJobs();
    assert.equal(((await (await api.job(ada, second.id)).json()) as JobDto).status, "succeeded");
    assert.deepEqual(
      (await partsOf(second.id)).map((p) => (p.input as { part: number }).part),
      [2],
    );
    const complete = await zipOf(await api.download(ada, second.id));
    assert.deepEqual(complete.manifest.repair, { of: first.id, adopted: [1, 3, 4], rerun: [2] });
    assert.equal(complete.manifest.files.length, 4);
    for (const f of complete.manifest.files) assert.equal(sha256(complete.entries.get(f.name)!), f.sha256);
    // Both partial files — the export's and the first repair's — now give the complete archive.
    for (const jobId of [id, first.id]) {
      assert.equal(sha256((await zipOf(await api.download(ada, jobId))).bytes), sha256(complete.bytes));
    }
  });
});
