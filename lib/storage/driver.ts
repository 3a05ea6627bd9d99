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
  /**
   * Streams `source` (through optional transforms) to `key`; resolves with its size and sha256.
   * The write owns `source`: when it fails, at any point (a directory it cannot make, a full
   * disk, an S3 5xx), `source` is destroyed with the error, so whatever feeds it (a COPY, a
   * file) is released rather than left paused, and the promise rejects with the cause.
   */
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

/**
 * A driver's failed write: `source` is destroyed with the cause (see StorageDriver.write),
 * and the cause is returned to be thrown.
 */
export function abandonSource(source: Readable, err: unknown): unknown {
  if (!source.destroyed) source.destroy(err instanceof Error ? err : new Error(String(err)));
  return err;
}
