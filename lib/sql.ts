/**
 * Typed SQL statements. A statement lives in a `sql/` folder of its module, one
 * statement a `.sql` file; `npm run sql:generate` (scripts/sql-generate.ts)
 * asks a migrated database what each one takes and returns and writes the
 * folder's `statements.ts`: one `Statement` a file, its text and its types.
 * The generated files are committed, so a fresh clone builds without a
 * database; a test regenerates them and fails when they are out of step.
 *
 * `run` executes one on a node-postgres client (a pool, a transaction's client)
 * or inside a Prisma transaction. The two return some types differently (int8:
 * text against bigint; numeric), so a statement returning such a column is
 * typed for the client its `.sql` file names (`-- @client prisma`; default
 * node-postgres) and `run` accepts only that one.
 */
import { prepared, type Prisma, type SqlClient } from "./db";

export type SqlDriver = "pg" | "prisma";

export type Statement<P extends readonly unknown[], R, C extends SqlDriver | "any" = "any"> = {
  /** The file's name, without `.sql`. */
  readonly name: string;
  readonly text: string;
  /** `-- @prepare`: run as a named prepared statement (lib/db.ts `prepared`). */
  readonly prepare: boolean;
  /** Whether it returns rows (a SELECT, or a RETURNING clause). */
  readonly returnsRows: boolean;
  readonly client: C;
  /** Types only: never set. */
  readonly types?: { params: P; row: R };
};

export type Params<S> = S extends Statement<infer P, unknown, SqlDriver | "any"> ? P : never;
export type Row<S> = S extends Statement<readonly unknown[], infer R, SqlDriver | "any"> ? R : never;

export type SqlResult<R> = { rows: R[]; rowCount: number };

function isPrisma(on: SqlClient | Prisma.TransactionClient): on is Prisma.TransactionClient {
  return typeof (on as Prisma.TransactionClient).$queryRawUnsafe === "function";
}

/** Runs `st` with `params` on a node-postgres client or a Prisma transaction. */
export async function run<P extends readonly unknown[], R>(
  on: SqlClient,
  st: Statement<P, R, "pg" | "any">,
  params: P,
): Promise<SqlResult<R>>;
export async function run<P extends readonly unknown[], R>(
  on: Prisma.TransactionClient,
  st: Statement<P, R, "prisma" | "any">,
  params: P,
): Promise<SqlResult<R>>;
export async function run<P extends readonly unknown[], R>(
  on: SqlClient | Prisma.TransactionClient,
  st: Statement<P, R, "pg" | "prisma" | "any">,
  params: P,
): Promise<SqlResult<R>>;
export async function run<P extends readonly unknown[], R>(
  on: SqlClient | Prisma.TransactionClient,
  st: Statement<P, R, SqlDriver | "any">,
  params: P,
): Promise<SqlResult<R>> {
  if (isPrisma(on)) {
    if (!st.returnsRows) return { rows: [], rowCount: await on.$executeRawUnsafe(st.text, ...params) };
    const rows = await on.$queryRawUnsafe<R[]>(st.text, ...params);
    return { rows, rowCount: rows.length };
  }
  const values = params as unknown as unknown[];
  const res = st.prepare
    ? await on.query<R & object>({ ...prepared(st.text), values })
    : await on.query<R & object>(st.text, values);
  return { rows: res.rows, rowCount: res.rowCount ?? 0 };
}
