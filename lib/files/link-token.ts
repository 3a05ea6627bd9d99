/** Download link tokens: `dl_` + 32 random bytes; only their sha256 is stored. */
import { createHash } from "node:crypto";

export const LINK_PREFIX = "dl_";

export const hashLink = (token: string) => createHash("sha256").update(token).digest("hex");
