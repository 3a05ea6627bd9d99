/**
 * The generator behind `npm run sql:generate` (lib/sql.ts says why): every
 * `lib/**\/sql/*.sql` file is one statement; each is parsed and described by a
 * migrated database (the extended protocol's Parse + Describe: parameter and
 * result column types, nothing runs) and each `sql/` folder gets a
 * `statements.ts` with one typed `Statement` a file.
 *
 * In a `.sql` file:
 *   -- @prepare          run it as a named prepared statement (lib/db.ts `prepared`)
 *   -- @client prisma    type its rows as Prisma returns them (int8 as bigint); default node-postgres
 *   AS "name!"           the column is never null (an expression the database cannot tell about)
 *   AS "name?"           the column may be null (a table column reached through an outer join)
 * A column straight from a table column is nullable when the column is; any other is nullable
 * unless marked. Parameters take null (SQL decides what it means).
 * The files are written as they are (prettier leaves them alone: .prettierignore), so the
 * generator needs nothing the production image lacks.
 */
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import type pg from "pg";

type Described = {
  params: number[];
  fields: { name: string; tableID: number; columnID: number; dataTypeID: number }[];
};

/** Parse + Describe of an unnamed statement, as a query object node-postgres submits in its queue. */
function describe(client: pg.Client, text: string): Promise<Described> {
  return new Promise((resolve, reject) => {
    const out: Described = { params: [], fields: [] };
    const submittable = {
      submit(connection: {
        once(event: string, fn: (m: { dataTypeIDs: number[] }) => void): void;
        removeListener(event: string, fn: (m: { dataTypeIDs: number[] }) => void): void;
        parse(m: { text: string; types: number[] }): void;
        describe(m: { type: string; name: string }): void;
        sync(): void;
      }) {
        const onParams = (m: { dataTypeIDs: number[] }) => (out.params = [...m.dataTypeIDs]);
        connection.once("parameterDescription", onParams);
        this.cleanup = () => connection.removeListener("parameterDescription", onParams);
        connection.parse({ text, types: [] });
        connection.describe({ type: "S", name: "" });
        connection.sync();
      },
      cleanup: () => {},
      handleRowDescription(m: { fields: Described["fields"] }) {
        out.fields = m.fields.map((f) => ({ ...f }));
      },
      // node-postgres drops a query once it errs: the ReadyForQuery that follows is not passed on.
      handleError(err: Error) {
        this.cleanup();
        reject(err);
      },
      handleReadyForQuery() {
        this.cleanup();
        resolve(out);
      },
      handleDataRow() {},
      handleCommandComplete() {},
      handleEmptyQuery() {},
    };
    (client as unknown as { query(q: unknown): void }).query(submittable);
  });
}

type PgType = { oid: number; name: string; elem: number; enumLabels: string[] | null };

async function typesOf(client: pg.Client, oids: number[]): Promise<Map<number, PgType>> {
  const { rows } = await client.query<{ oid: number; name: string; elem: number; labels: string[] | null }>(
    `SELECT t.oid::int AS oid, t.typname AS name, t.typelem::int AS elem,
            (SELECT array_agg(e.enumlabel::text ORDER BY e.enumsortorder) FROM pg_enum e WHERE e.enumtypid = t.oid) AS labels
       FROM pg_type t WHERE t.oid = ANY($1::oid[])`,
    [oids],
  );
  const map = new Map(rows.map((r) => [r.oid, { oid: r.oid, name: r.name, elem: r.elem, enumLabels: r.labels }]));
  const elems = rows.filter((r) => r.elem && !map.has(r.elem)).map((r) => r.elem);
  if (elems.length) for (const [k, v] of await typesOf(client, elems)) map.set(k, v);
  return map;
}

/** Types that node-postgres and Prisma hand back differently. */
const DRIVER_DEPENDENT = new Set(["int8", "numeric", "money", "bytea", "interval"]);

function tsType(t: PgType | undefined, types: Map<number, PgType>, dir: "param" | "row", driver: string): string {
  if (!t) return "unknown";
  if (t.enumLabels) return t.enumLabels.map((l) => JSON.stringify(l)).join(" | ");
  if (t.name.startsWith("_") && t.elem) {
    const inner = tsType(types.get(t.elem), types, dir, driver);
    return /[ |]/.test(inner) ? `(${inner})[]` : `${inner}[]`;
  }
  switch (t.name) {
    case "bool":
      return "boolean";
    case "int2":
    case "int4":
    case "float4":
    case "float8":
    case "oid":
      return "number";
    case "int8":
      if (dir === "param") return "string | number | bigint";
      return driver === "prisma" ? "bigint" : "string";
    case "numeric":
      return dir === "param" ? "string | number" : driver === "prisma" ? "Prisma.Decimal" : "string";
    case "text":
    case "varchar":
    case "bpchar":
    case "name":
    case "uuid":
    case "inet":
    case "citext":
    case "regclass":
      return "string";
    case "timestamptz":
    case "timestamp":
    case "date":
      return dir === "param" ? "Date | string" : "Date";
    case "json":
    case "jsonb":
      return "unknown";
    case "void":
      return "void";
    default:
      return "unknown";
  }
}

export type SqlFile = { folder: string; file: string; text: string };

/** Every `.sql` file under `lib/` in a folder named `sql`, sorted. */
export async function findSqlFiles(root: string): Promise<SqlFile[]> {
  const out: SqlFile[] = [];
  const walk = async (dir: string): Promise<void> => {
    for (const e of await readdir(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) {
        if (e.name !== "generated" && e.name !== "node_modules") await walk(p);
      } else if (e.name.endsWith(".sql") && path.basename(dir) === "sql") {
        out.push({ folder: path.relative(root, dir), file: e.name, text: await readFile(p, "utf8") });
      }
    }
  };
  await walk(path.join(root, "lib"));
  return out.sort((a, b) => (a.folder + "/" + a.file).localeCompare(b.folder + "/" + b.file));
}

const camel = (file: string) =>
  file.replace(/\.sql$/, "").replace(/[-_.]+([a-z0-9])/g, (_, c: string) => c.toUpperCase());

/** The generated `statements.ts` of each `sql/` folder (relative path → text). */
export async function generateStatements(client: pg.Client, root: string): Promise<Map<string, string>> {
  const files = await findSqlFiles(root);
  const byFolder = new Map<string, string[]>();
  for (const f of files) {
    const where = `${f.folder}/${f.file}`;
    const driver = /^\s*--\s*@client\s+prisma\b/m.test(f.text) ? "prisma" : "pg";
    const prepare = /^\s*--\s*@prepare\b/m.test(f.text);
    // The text sent: the file without its comment-only lines at the top, and the column marks taken off.
    const body = f.text
      .replace(/^(\s*--[^\n]*\n)+/, "")
      .trim()
      .replace(/;\s*$/, "");
    if (!body) throw new Error(`${where}: no statement`);
    const marks = new Map<string, "!" | "?">();
    const text = body.replace(/AS\s+"([^"]+?)([!?])"/g, (_, name: string, mark: "!" | "?") => {
      marks.set(name, mark);
      return `AS "${name}"`;
    });
    let d: Described;
    try {
      d = await describe(client, text);
    } catch (err) {
      throw new Error(`${where}: ${(err as Error).message}`, { cause: err });
    }
    const types = await typesOf(client, [...d.params, ...d.fields.map((x) => x.dataTypeID)]);
    const notNull = new Set<string>();
    const cols = d.fields.filter((x) => x.tableID);
    if (cols.length) {
      const { rows } = await client.query<{ rel: number; num: number }>(
        `SELECT attrelid::int AS rel, attnum::int AS num FROM pg_attribute
          WHERE attnotnull AND (attrelid, attnum) IN (SELECT * FROM unnest($1::oid[], $2::int2[]))`,
        [cols.map((x) => x.tableID), cols.map((x) => x.columnID)],
      );
      for (const r of rows) notNull.add(`${r.rel}.${r.num}`);
    }
    const usedDriver = d.fields.some((x) => DRIVER_DEPENDENT.has(types.get(x.dataTypeID)?.name ?? "")) ? driver : "any";
    const params = d.params.map((oid) => `${tsType(types.get(oid), types, "param", driver)} | null`);
    const fields = d.fields.map((x) => {
      const mark = marks.get(x.name);
      const nullable = mark ? mark === "?" : !(x.tableID && notNull.has(`${x.tableID}.${x.columnID}`));
      const t = tsType(types.get(x.dataTypeID), types, "row", driver);
      return `${JSON.stringify(x.name)}: ${t}${nullable ? " | null" : ""};`;
    });
    const name = camel(f.file);
    const doc = f.text.match(/^(\s*--[^\n]*\n)+/)?.[0];
    const comment = doc
      ?.split("\n")
      .map((l) => l.replace(/^\s*--\s?/, ""))
      .filter((l) => l && !l.startsWith("@"))
      .join("\n * ");
    const entry = [
      comment ? `/**\n * ${comment}\n */` : `/** ${f.file} */`,
      `export const ${name}: Statement<`,
      `  [${params.join(", ")}],`,
      fields.length ? `  {\n${fields.map((x) => `    ${x}`).join("\n")}\n  },` : "  Record<string, never>,",
      `  ${JSON.stringify(usedDriver)}`,
      `> = {`,
      `  name: ${JSON.stringify(f.file.replace(/\.sql$/, ""))},`,
      `  text: ${JSON.stringify(text)},`,
      `  prepare: ${prepare},`,
      `  returnsRows: ${d.fields.length > 0},`,
      `  client: ${JSON.stringify(usedDriver)},`,
      `};`,
    ].join("\n");
    const list = byFolder.get(f.folder) ?? [];
    list.push(entry);
    byFolder.set(f.folder, list);
  }
  const out = new Map<string, string>();
  for (const [folder, entries] of byFolder) {
    const up = path.relative(folder, "lib").split(path.sep).join("/");
    const src = [
      `// Generated by \`npm run sql:generate\` from the .sql files beside it, typed by a migrated database. Do not edit.`,
      entries.some((e) => e.includes("Prisma.Decimal")) ? `import type { Prisma } from "${up}/db";` : "",
      `import type { Statement } from "${up}/sql";`,
      "",
      entries.join("\n\n"),
      "",
    ]
      .join("\n")
      .replace(/\n{3,}/g, "\n\n");
    out.set(path.join(folder, "statements.ts"), src);
  }
  return out;
}
