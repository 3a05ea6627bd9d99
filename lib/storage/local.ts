/**
 * The local-disk driver (the default): every write goes to a temporary name
 * first and is renamed into place when complete, so a reader never sees a
 * partial file and a retried attempt overwrites cleanly.
 */
import { createReadStream, createWriteStream } from "node:fs";
import { mkdir, rename, rm, stat } from "node:fs/promises";
import path from "node:path";
import type { Readable, Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import { abandonSource, createDigestStream, type ByteRange, type StorageDriver, type StoredObject } from "./driver";

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
}
