/**
 * Who is on the other end of a request: its address, as the web server
 * (scripts/serve.ts) recorded it in a header no client can set. Behind a proxy
 * you run, TRUST_PROXY=1 takes the first X-Forwarded-For entry instead.
 */
import { env } from "../env";

export const CLIENT_ADDRESS_HEADER = "x-conveyor-client-address";

/** The client's address from request headers; "unknown" when nothing trustworthy says it. */
export function clientAddressFrom(headers: Headers): string {
  const recorded = headers.get(CLIENT_ADDRESS_HEADER);
  if (recorded) return recorded;
  if (env().TRUST_PROXY === "1") {
    const first = headers.get("x-forwarded-for")?.split(",")[0]?.trim();
    if (first) return first;
  }
  return "unknown";
}
