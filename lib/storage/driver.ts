/**
 * What a storage driver does, and what every driver shares: export files are
 * written as a stream (through optional transforms), hashed and counted on the
 * way, and become visible only when complete.
 */
import { createHash, type Hash } from "node:crypto";
import { Transform, type Readable } from "node:stream";
import { z } from "zod";

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
  /**
   * Starts writing `key` in segments, staged where no reader sees it until `finish`; or, given
   * a state a checkpoint saved, continues that write after its last committed segment (throws
   * SegmentsLostError when it cannot: start again without it). The writer that continues takes
   * the staged bytes over, so an earlier writer still running (a stale attempt) cannot add to them.
   */
  segmented(key: string, resume?: SegmentState): Promise<SegmentedWrite>;
  /**
   * Throws away a segmented write that will never be finished (its job ended without it), from
   * the state its checkpoint saved: the staging file, or the S3 multipart upload and its pieces.
   * Already gone is not an error.
   */
  discardSegments(state: SegmentState): Promise<void>;
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

/**
 * Where a file written in segments stands, as a job saves it in its checkpoint:
 * enough for another process to continue it after a crash. `size` counts the
 * bytes of the segments committed so far, and nothing after them.
 * - local: the staging file (a storage key) those bytes are in;
 * - s3: the multipart upload (its object key and upload id) and the pieces
 *   uploaded for them (each at least 5 MiB: S3's minimum for all but the last).
 */
export const segmentStateSchema = z.discriminatedUnion("driver", [
  z.object({ driver: z.literal("local"), key: z.string().min(1), size: z.number().int().min(0) }).strict(),
  z
    .object({
      driver: z.literal("s3"),
      key: z.string().min(1),
      uploadId: z.string().min(1),
      size: z.number().int().min(0),
      pieces: z.array(
        z.object({ n: z.number().int().min(1), etag: z.string(), size: z.number().int().min(0) }).strict(),
      ),
    })
    .strict(),
]);
export type SegmentState = z.infer<typeof segmentStateSchema>;

/** A file written as a sequence of segments, each durable once appended; see StorageDriver.segmented. */
export interface SegmentedWrite {
  /**
   * Streams one segment (through its own transforms) after the ones before, and resolves once
   * it is durable. `committed`: `state()` now ends with this segment, so it may be saved — always
   * on local disk; on S3 only when the bytes not yet in a piece could be made one (5 MiB or more),
   * else they are carried into the next segment. On failure the write is unusable (start again
   * from the last saved state) and `source` is destroyed with the cause, as in `write`.
   */
  append(source: Readable, transforms: Transform[], signal?: AbortSignal): Promise<{ committed: boolean }>;
  /** The state as of the last committed segment: what a checkpoint saves. */
  state(): SegmentState;
  /**
   * Completes the file and makes it visible: under the key given to `segmented` — except on S3
   * when continuing, where the upload's own key is kept (`key` says which). Its sha256 is of the
   * whole file (on S3 after a resume, read back once: a hash's state does not outlive a process).
   */
  finish(): Promise<StoredObject & { key: string }>;
  /** Discards what was written. */
  abandon(): Promise<void>;
}

/** A saved segment state that can no longer be continued (its staging file or upload is gone or short). */
export class SegmentsLostError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SegmentsLostError";
  }
}

/** A Transform that feeds `hash` and counts what passes through (into `counter.bytes`). */
export function tapInto(hash: Hash, counter: { bytes: number }): Transform {
  return new Transform({
    transform(chunk: Buffer, _enc, cb) {
      hash.update(chunk);
      counter.bytes += chunk.length;
      cb(null, chunk);
    },
  });
}
