/**
 * The `anonymous` budget of the client address (RATE_LIMIT_ANON_PER_MINUTE) for pages and
 * server actions that take no sign-in (an invitation's page); route handlers use
 * `publicRoute(…, { perAddress: true })`.
 */
import { headers } from "next/headers";
import { addressKey, spendRateLimit } from "../auth/rate-limit";
import { clientAddressFrom } from "./client";

/** Spends one request of the caller's address; throws the 429 AppError past the budget. */
export async function spendAddressBudget(): Promise<void> {
  await spendRateLimit(addressKey(clientAddressFrom(await headers())), "anonymous");
}
