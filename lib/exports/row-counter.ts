const QUOTE = 0x22;
const NEWLINE = 0x0a;

/**
 * Counts complete rows in a stream of COPY output. CSV fields may hold
 * newlines inside quotes, so a newline ends a row only outside quotes
 * (an escaped quote `""` toggles twice and changes nothing). JSONL has one row per line.
 */
export function createRowCounter(format: "csv" | "jsonl"): (chunk: Buffer) => number {
  if (format === "jsonl") {
    return (chunk) => {
      let rows = 0;
      for (let i = chunk.indexOf(NEWLINE); i !== -1; i = chunk.indexOf(NEWLINE, i + 1)) rows++;
      return rows;
    };
  }
  let inQuote = false;
  return (chunk) => {
    let rows = 0;
    let i = 0;
    const n = chunk.length;
    let q = chunk.indexOf(QUOTE, 0);
    let nl = chunk.indexOf(NEWLINE, 0);
    while (i < n) {
      if (inQuote) {
        if (q === -1) break;
        inQuote = false;
        i = q + 1;
        q = chunk.indexOf(QUOTE, i);
        continue;
      }
      if (nl !== -1 && nl < i) nl = chunk.indexOf(NEWLINE, i);
      if (nl === -1 && q === -1) break;
      if (nl !== -1 && (q === -1 || nl < q)) {
        rows++;
        i = nl + 1;
        nl = chunk.indexOf(NEWLINE, i);
      } else {
        inQuote = true;
        i = q + 1;
        q = chunk.indexOf(QUOTE, i);
      }
    }
    return rows;
  };
}
