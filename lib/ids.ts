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

/**
 * An id shortened for people: its last 8 characters, "…3f9a1c2e". Ids are UUIDv7, time-ordered:
 * their first characters are a timestamp, the same for every job made in the same minute or so,
 * so only the end tells two apart. Show the whole id beside it (a title, a copy button).
 */
export function shortId(id: string): string {
  return id.length > 8 ? `…${id.slice(-8)}` : id;
}
