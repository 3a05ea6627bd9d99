/**
 * A dead letter's fingerprint: its error message with what changes from one occurrence of the
 * same failure to the next masked (ids, worker ids, hosts and ports, durations, numbers), so
 * the dead-letter queue groups one cause once. The database computes it (the generated column
 * `jobs.error_fingerprint`, so every writer gets it right); the rules live here, once, and the
 * migration's expression is made from them by `fingerprintSql` (a unit test holds the two
 * together, an integration test checks that Postgres masks as `maskErrorMessage` does).
 *
 * Each pattern means the same to JavaScript and to Postgres' regular expressions (AREs): bracket
 * classes, bounded repeats, groups, `(?!…)`; no `\b`, `\d` or back references. They apply in order.
 */
export const FINGERPRINT_RULES: readonly { what: string; pattern: string; mask: string }[] = [
  {
    what: "uuids",
    pattern: "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
    mask: "<id>",
  },
  // A worker's id is host:pid:6 hex digits (lib/jobs/workers.ts): vm:31405:1fd691.
  { what: "worker ids", pattern: "[A-Za-z0-9._-]+:[0-9]+:[0-9a-f]{6}(?![0-9A-Za-z])", mask: "<worker>" },
  { what: "ULIDs", pattern: "[0-7][0-9A-HJKMNP-TV-Z]{25}(?![0-9A-Za-z])", mask: "<id>" },
  {
    what: "hosts with a port",
    pattern: "([A-Za-z][A-Za-z0-9-]*([.][A-Za-z0-9-]+)*|[0-9]{1,3}([.][0-9]{1,3}){3}):[0-9]{2,5}(?![0-9])",
    mask: "<host>",
  },
  { what: "IPv4 addresses", pattern: "[0-9]{1,3}([.][0-9]{1,3}){3}", mask: "<host>" },
  {
    what: "durations",
    pattern: "[0-9]+([.][0-9]+)? ?(seconds|second|minutes|minute|hours|hour|min|sec|ms|s|m|h)(?![A-Za-z])",
    mask: "<duration>",
  },
  { what: "hex ids", pattern: "[0-9a-f]{8,}", mask: "<id>" },
  { what: "numbers", pattern: "[0-9]+([.][0-9]+)?", mask: "<n>" },
];

/** Fingerprints keep this many characters. */
export const FINGERPRINT_LENGTH = 500;

/** An error message's fingerprint, as the database computes it. */
export function maskErrorMessage(message: string): string {
  let out = message;
  for (const r of FINGERPRINT_RULES) out = out.replace(new RegExp(r.pattern, "g"), r.mask);
  return out.slice(0, FINGERPRINT_LENGTH);
}

const literal = (s: string) => `'${s.replaceAll("'", "''")}'`;

/** The SQL expression of `maskErrorMessage` over a column (the generated column's body). */
export function fingerprintSql(column: string): string {
  let expr = column;
  for (const r of FINGERPRINT_RULES) expr = `regexp_replace(${expr}, ${literal(r.pattern)}, ${literal(r.mask)}, 'g')`;
  return `left(${expr}, ${FINGERPRINT_LENGTH})`;
}
