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
  // A plain byte loop: measured about twice as fast as hopping between
  // indexOf calls on data dense with quotes (JSON columns escape every quote).
  let inQuote = 0;
  return (chunk) => {
    let rows = 0;
    let q = inQuote;
    for (let i = 0; i < chunk.length; i++) {
      const b = chunk[i];
      if (b === QUOTE) q ^= 1;
      else if (b === NEWLINE && q === 0) rows++;
    }
    inQuote = q;
    return rows;
  };
}
