/** A download link's answer (lib/files/links.ts), shared by the workloads whose files have links (exports, imports). */
import { z } from "zod";
import { id, instant, nullableInstant } from "../api-doc";

export const linkSchema = z
  .object({
    id,
    expiresAt: instant,
    revokedAt: nullableInstant,
    downloadCount: z.number().int(),
    createdAt: instant,
    url: z.string().optional().meta({ description: "The link itself: only in the answer that made it" }),
  })
  .meta({ id: "DownloadLink" });
export const linkListSchema = z.object({ links: z.array(linkSchema) });
