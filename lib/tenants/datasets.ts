/** A tenant's business data sets: what it exports (lib/exports) and imports (lib/imports). */
export const datasetNames = ["customers", "orders", "events"] as const;
export type DatasetName = (typeof datasetNames)[number];
