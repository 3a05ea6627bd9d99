/**
 * The local-disk driver (the default): every write goes to a temporary name
 * first and is renamed into place when complete, so a reader never sees a
 * partial file and a retried attempt overwrites cleanly. A segmented write
 * appends to a staging file (`<key>.segments`), synced after each segment.
 */
import { createHash, type Hash } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { mkdir, open, rename, rm, stat, truncate, writeFile } from "node:fs/promises";
import path from "node:path";
import type { Readable, Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import {
  abandonSource,
  createDigestStream,
  SegmentsLostError,
  tapInto,
  type ByteRange,
  type SegmentedWrite,
  type SegmentState,
  type StorageDriver,
  type StoredObject,
} from "./driver";

export class LocalDiskStorage implements StorageDriver {
  constructor(private readonly root: string) {}

  private resolve(key: string): string {
    const full = path.resolve(this.root, key);
    // Keys are built by lib/ from ids, but never let one escape the root.
    if (!full.startsWith(path.resolve(this.root) + path.sep)) throw new Error(`Storage key escapes the root: ${key}`);
    return full;
  }

  async write(key: string, source: Readable, transforms: Transform[], signal?: AbortSignal): Promise<StoredObject> {
    let temp: string | null = null;
    try {
      const target = this.resolve(key);
      // (ENOTDIR, EACCES… here: the source is not read at all, and is destroyed below.)
      await mkdir(path.dirname(target), { recursive: true });
      temp = `${target}.partial-${process.pid}-${Date.now()}`;
      const digest = createDigestStream();
      await pipeline([source, ...transforms, digest.stream, createWriteStream(temp)], { signal });
      await rename(temp, target);
      return digest.result();
    } catch (err) {
      if (temp) await rm(temp, { force: true }).catch(() => {});
      throw abandonSource(source, err);
    }
  }

  async open(key: string, range?: ByteRange): Promise<{ stream: Readable; size: number } | null> {
    const file = this.resolve(key);
    try {
      const { size } = await stat(file);
      if (range) {
        return {
          stream: createReadStream(file, { highWaterMark: 256 * 1024, start: range.start, end: range.end }),
          size: Math.max(0, Math.min(range.end, size - 1) - range.start + 1),
        };
      }
      return { stream: createReadStream(file, { highWaterMark: 256 * 1024 }), size };
    } catch {
      return null;
    }
  }

  async delete(key: string): Promise<void> {
    await rm(this.resolve(key), { force: true });
  }

  async discardSegments(state: SegmentState): Promise<void> {
    // A state of another driver's names nothing here.
    if (state.driver === "local") await this.delete(state.key);
  }

  async segmented(key: string, resume?: SegmentState): Promise<SegmentedWrite> {
    const stagingKey = `${key}.segments`;
    const staging = this.resolve(stagingKey);
    await mkdir(path.dirname(staging), { recursive: true });
    const hash = createHash("sha256");
    let size = 0;
    if (resume) {
      size = await this.takeOver(resume, staging, hash);
    } else {
      await writeFile(staging, "");
    }
    return new LocalSegmentedWrite(this.resolve(key), key, stagingKey, staging, hash, size);
  }

  /**
   * Continues a saved segmented write in `staging`: its committed bytes are copied (and hashed)
   * from the earlier writer's staging file, which is then removed — so a stale writer still
   * running appends to nothing this one reads, and fails at its next segment or its rename.
   * Copying costs a read of the bytes already written, never a row of the database.
   */
  private async takeOver(resume: SegmentState, staging: string, hash: Hash): Promise<number> {
    if (resume.driver !== "local")
      throw new SegmentsLostError(`A ${resume.driver} write cannot continue on local disk`);
    const from = this.resolve(resume.key);
    const found = await stat(from).catch(() => null);
    if (!found || found.size < resume.size) {
      throw new SegmentsLostError(
        `The staged file ${resume.key} is ${found ? `short (${found.size} of ${resume.size} bytes)` : "gone"}`,
      );
    }
    const counter = { bytes: 0 };
    const prefix = () => createReadStream(from, { end: resume.size - 1, highWaterMark: 256 * 1024 });
    if (from === staging) {
      // The same run continues its own file (not reached today: every run writes under its own key).
      if (resume.size > 0) for await (const chunk of prefix()) hash.update(chunk as Buffer);
      await truncate(staging, resume.size);
      return resume.size;
    }
    if (resume.size > 0) await pipeline([prefix(), tapInto(hash, counter), createWriteStream(staging)]);
    else await writeFile(staging, "");
    await syncFile(staging);
    await rm(from, { force: true });
    return resume.size;
  }
}

/** Flushes a file's data to the disk, so a committed segment outlives a machine's crash too. */
async function syncFile(file: string): Promise<void> {
  const handle = await open(file, "r+");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

class LocalSegmentedWrite implements SegmentedWrite {
  private broken: Error | null = null;

  constructor(
    private readonly target: string,
    private readonly key: string,
    private readonly stagingKey: string,
    private readonly staging: string,
    private readonly hash: Hash,
    private size: number,
  ) {}

  async append(source: Readable, transforms: Transform[], signal?: AbortSignal): Promise<{ committed: boolean }> {
    const counter = { bytes: 0 };
    try {
      if (this.broken) throw this.broken;
      // A segment goes at the committed end (not O_APPEND): what a failed segment left is overwritten.
      const out = createWriteStream(this.staging, { flags: "r+", start: this.size });
      await pipeline([source, ...transforms, tapInto(this.hash, counter), out], { signal });
      await syncFile(this.staging);
    } catch (err) {
      // The hash has seen bytes that are not committed: this writer cannot go on.
      this.broken ??= err instanceof Error ? err : new Error(String(err));
      throw abandonSource(source, err);
    }
    this.size += counter.bytes;
    return { committed: true };
  }

  state(): SegmentState {
    return { driver: "local", key: this.stagingKey, size: this.size };
  }

  async finish(): Promise<StoredObject & { key: string }> {
    if (this.broken) throw this.broken;
    // Bytes past the committed end (a failed segment's, before a retry wrote fewer) are cut.
    await truncate(this.staging, this.size);
    await rename(this.staging, this.target);
    return { key: this.key, size: this.size, sha256: this.hash.digest("hex") };
  }

  async abandon(): Promise<void> {
    await rm(this.staging, { force: true });
  }
}
