/** Small wording helpers the kinds share. */
const nf = new Intl.NumberFormat("en-US");

export const capitalize = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/** "2,500". */
export const num = (n: number) => nf.format(Math.round(n));

/** "1 row", "2,500 rows". */
export const count = (n: number, noun: string) => `${num(n)} ${noun}${n === 1 ? "" : "s"}`;

/** A number out of a progress detail, or null when it is not one. */
export function numberIn(detail: Record<string, unknown> | null | undefined, key: string): number | null {
  const v = detail?.[key];
  return typeof v === "number" && Number.isFinite(v) ? v : null;
}
