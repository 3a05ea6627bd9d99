import { notFound } from "./errors";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** True for a syntactically valid UUID. */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}

/** An id from a URL: anything that is not a UUID cannot exist, so it answers 404 (never a 500 from Postgres). */
export function parseIdOr404(value: string, what = "Not found"): string {
  if (!isUuid(value)) throw notFound(what);
  return value.toLowerCase();
}
