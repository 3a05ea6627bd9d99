/**
 * The commit stage: one transaction moves the staged rows into the tenant's
 * table (insert, or upsert by the natural key) and drops the staging table.
 */
import { cancelOnAbort, inTransaction, type SqlClient } from "../db";
import { PermanentError } from "../jobs/errors";
import { defineTask } from "../jobs/task";
import { importDatasets } from "./columns";
import {
  type CommitOutput,
  IMPORT_RETRY,
  type ImportRequest,
  type LoadOutput,
  type ParseOutput,
  type ScanOutput,
  follow,
  stageInputSchema,
} from "./stage-input";

// ── commit ──────────────────────────────────────────────────────────────────

/** `counts`: the statement's row count is this; otherwise it returns one row of { inserted, updated }. */
type CommitPlan = { sql: string; params: unknown[]; counts?: "inserted" | "updated" };

/** The statements that move the staged rows into the tenant's table, counting what they did. */
function commitStatements(req: ImportRequest, table: string, tenantId: string, present: string[]): CommitPlan[] {
  const spec = importDatasets[req.dataset];
  const cols = spec.columns.filter((c) => c.name !== "id");
  const value = (c: (typeof cols)[number], from = "s") =>
    c.fallback && !present.includes(c.name)
      ? c.fallback
      : c.fallback
        ? `coalesce(${from}."${c.name}", ${c.fallback})`
        : `${from}."${c.name}"`;
  const names = cols.map((c) => `"${c.name}"`).join(", ");
  const values = cols.map((c) => value(c)).join(", ");
  // An update sets only the columns the file has.
  const updatable = cols.filter((c) => present.includes(c.name) && c.name !== spec.key);
  if (req.mode === "insert") {
    return [
      {
        // Counted from the command tag (no RETURNING to materialise); ids follow the file's order.
        sql: `INSERT INTO ${spec.table} (tenant_id, ${names}) SELECT $1::uuid, ${values} FROM ${table} s ORDER BY s.line`,
        params: [tenantId],
        counts: "inserted",
      },
    ];
  }
  if (spec.key === "email") {
    return [
      {
        sql: `WITH up AS (INSERT INTO ${spec.table} AS t (tenant_id, ${names})
                SELECT $1::uuid, ${values} FROM (SELECT DISTINCT ON (email) * FROM ${table} ORDER BY email, line DESC) s
                ORDER BY s.line
                ON CONFLICT (tenant_id, email) DO UPDATE SET ${updatable.map((c) => `"${c.name}" = ${value(c, "EXCLUDED")}`).join(", ") || "email = EXCLUDED.email"}
                RETURNING (xmax = 0) AS inserted)
              SELECT count(*) FILTER (WHERE inserted)::bigint AS inserted, count(*) FILTER (WHERE NOT inserted)::bigint AS updated FROM up`,
        params: [tenantId],
      },
    ];
  }
  // By id within the tenant: the rows whose id the tenant has are updated (the file's last line
  // for an id wins); every other row is inserted with a new id, so no other tenant's row — and
  // no id the sequence will hand out — is ever touched.
  const latest = `(SELECT DISTINCT ON (coalesce(id::text, 'line ' || line)) * FROM ${table}
                   ORDER BY coalesce(id::text, 'line ' || line), line DESC)`;
  return [
    {
      sql: `UPDATE ${spec.table} t SET ${updatable.map((c) => `"${c.name}" = ${value(c)}`).join(", ")}
            FROM ${latest} s WHERE s.id IS NOT NULL AND t.tenant_id = $1::uuid AND t.id = s.id`,
      params: [tenantId],
      counts: "updated",
    },
    {
      sql: `INSERT INTO ${spec.table} (tenant_id, ${names})
            SELECT $1::uuid, ${values} FROM ${latest} s
            WHERE s.id IS NULL OR NOT EXISTS (SELECT 1 FROM ${spec.table} t WHERE t.tenant_id = $1::uuid AND t.id = s.id)
            ORDER BY s.line`,
      params: [tenantId],
      counts: "inserted",
    },
  ];
}

/** Refuses what the target table would refuse or must not get: duplicate emails, customers of other tenants. */
async function checkStaged(tx: SqlClient, req: ImportRequest, table: string, tenantId: string): Promise<void> {
  const first = async (sql: string, params: unknown[] = [tenantId]) =>
    (await tx.query<{ line: string; v: string }>(sql, params)).rows[0];
  if (req.dataset === "customers") {
    // An upsert takes each email's last line; an insert must not meet an email twice.
    if (req.mode === "insert") {
      const dup = await first(
        `SELECT min(line)::text AS line, email AS v FROM ${table} GROUP BY email HAVING count(*) > 1 ORDER BY 1 LIMIT 1`,
        [],
      );
      if (dup) {
        throw new PermanentError(
          `Line ${dup.line}: the email ${dup.v} appears more than once in the file (mode insert)`,
        );
      }
      const taken = await first(
        `SELECT s.line::text AS line, s.email AS v FROM ${table} s
         JOIN customers c ON c.tenant_id = $1::uuid AND c.email = s.email ORDER BY s.line LIMIT 1`,
      );
      if (taken) {
        throw new PermanentError(
          `Line ${taken.line}: a customer with the email ${taken.v} already exists; import with mode upsert to update customers`,
        );
      }
    }
    return;
  }
  const stranger = await first(
    `SELECT s.line::text AS line, s.customer_id::text AS v FROM ${table} s
     WHERE s.customer_id IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM customers c WHERE c.tenant_id = $1::uuid AND c.id = s.customer_id)
     ORDER BY s.line LIMIT 1`,
  );
  if (stranger)
    throw new PermanentError(`Line ${stranger.line}: customer_id ${stranger.v} is not a customer of this tenant`);
}

export const importCommitTask = defineTask({
  type: "import_commit",
  queue: "bulk",
  inputSchema: stageInputSchema,
  retry: IMPORT_RETRY,
  timeoutMs: 4 * 60 * 60_000,
  leaseMs: 30_000,
  async handler(ctx): Promise<CommitOutput> {
    const { input, job } = ctx;
    const req = input.request;
    await follow(input);
    const scan = input.outputs.scan as ScanOutput;
    const load = input.outputs.load as LoadOutput;
    const parse = input.outputs.parse as ParseOutput;
    ctx.progress({
      done: 0,
      total: parse.good,
      unit: "rows",
      stage: "commit",
    });
    const out = await inTransaction(async (tx) => {
      // The import's row is the commit's lock: a second attempt waits, then finds it committed.
      const { rows: held } = await tx.query<{
        committed_at: Date | null;
        inserted: string | null;
        updated: string | null;
      }>("SELECT committed_at, inserted::text, updated::text FROM imports WHERE id = $1 FOR UPDATE", [input.importId]);
      const mine = held[0];
      if (!mine) throw new PermanentError("The import's record is gone");
      if (mine.committed_at) {
        return {
          inserted: Number(mine.inserted),
          updated: Number(mine.updated),
          committedAt: mine.committed_at.toISOString(),
        };
      }
      const exists = await tx.query("SELECT to_regclass($1) AS t", [load.stagingTable]);
      if (!(exists.rows[0] as { t: string | null }).t)
        throw new PermanentError("The staged rows are gone; replay the import");
      // Room to sort the staged rows into the file's order in memory.
      await tx.query("SET LOCAL work_mem = '256MB'");
      const lost = (n: number | string) =>
        new PermanentError(
          `The staging table holds ${n} rows, not ${parse.good} (was the database restarted?); replay the import`,
        );
      if (req.mode === "upsert") {
        const { rows: counted } = await tx.query<{ n: string }>(`SELECT count(*)::text AS n FROM ${load.stagingTable}`);
        if (Number(counted[0]!.n) !== parse.good) throw lost(counted[0]!.n);
      }
      // A cancel (or a lost lease) stops the statement running, however long: nothing is committed.
      const stopListening = await cancelOnAbort(tx, ctx.signal);
      let inserted = 0;
      let updated = 0;
      try {
        await checkStaged(tx, req, load.stagingTable, job.tenantId);
        for (const st of commitStatements(req, load.stagingTable, job.tenantId, scan.columns)) {
          const r = await tx.query<{ inserted: string; updated: string }>(st.sql, st.params);
          if (st.counts === "inserted") inserted += r.rowCount ?? 0;
          else if (st.counts === "updated") updated += r.rowCount ?? 0;
          else {
            inserted += Number(r.rows[0]!.inserted);
            updated += Number(r.rows[0]!.updated);
          }
        }
      } catch (err) {
        if (ctx.signal.aborted) throw ctx.signal.reason;
        throw err;
      } finally {
        stopListening();
      }
      // An insert moves every staged row: fewer means the staging table lost some (rolled back).
      if (req.mode === "insert" && inserted !== parse.good) throw lost(inserted);
      const { rows: at } = await tx.query<{ committed_at: Date }>(
        "UPDATE imports SET committed_at = now(), inserted = $2, updated = $3 WHERE id = $1 RETURNING committed_at",
        [input.importId, inserted, updated],
      );
      await tx.query(`DROP TABLE ${load.stagingTable}`);
      return { inserted, updated, committedAt: at[0]!.committed_at.toISOString() };
    });
    const duplicates = Math.max(0, parse.good - out.inserted - out.updated);
    ctx.progress({
      done: parse.good,
      total: parse.good,
      unit: "rows",
      stage: "commit",
      detail: { inserted: out.inserted, updated: out.updated },
    });
    return { inserted: out.inserted, updated: out.updated, duplicates, committedAt: out.committedAt };
  },
});
