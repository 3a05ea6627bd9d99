/**
 * What a storage driver does, and what every driver shares: export files are
 * written as a stream (through optional transforms), hashed and counted on the
 * way, and become visible only when complete.
 */
import { createHash } from "node:crypto";
import { Transform, type Readable } from "node:stream";

export type StoredObject = { size: number; sha256: string };

/** Bytes `start` to `end` of an object, both inclusive (HTTP's Range, fs.createReadStream's options). */
export type ByteRange = { start: number; end: number };

export interface StorageDriver {
  /** Streams `source` (through optional transforms) to `key`; resolves with its size and sha256. */
  write(key: string, source: Readable, transforms: Transform[], signal?: AbortSignal): Promise<StoredObject>;
  /**
   * Opens a stored object for reading, or null if it is gone; with `range`,
   * only its bytes `start` to `end` (inclusive; `size` is then the range's).
   */
  open(key: string, range?: ByteRange): Promise<{ stream: Readable; size: number } | null>;
  delete(key: string): Promise<void>;
}

/** A Transform that hashes and counts what passes through. */
export function createDigestStream(): { stream: Transform; result(): StoredObject } {
  const hash = createHash("sha256");
  let size = 0;
  const stream = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      hash.update(chunk);
      size += chunk.length;
      cb(null, chunk);
    },
  });
  return { stream, result: () => ({ size, sha256: hash.digest("hex") }) };
}
