/**
 * Storage drivers keep export files. Local disk is the default; every write
 * goes to a temporary name first and is renamed into place when complete, so a
 * reader never sees a partial file and a retried attempt overwrites cleanly.
 */
import { createHash } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { mkdir, rename, rm, stat } from "node:fs/promises";
import path from "node:path";
import { Transform, type Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { env, exportStorageDir } from "../env";

export type StoredObject = { size: number; sha256: string };

export interface StorageDriver {
  /** Streams `source` (through optional transforms) to `key`; resolves with its size and sha256. */
  write(key: string, source: Readable, transforms: Transform[], signal?: AbortSignal): Promise<StoredObject>;
  /** Opens a stored object for reading, or null if it is gone. */
  open(key: string): Promise<{ stream: Readable; size: number } | null>;
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

export class LocalDiskStorage implements StorageDriver {
  constructor(private readonly root: string) {}

  private resolve(key: string): string {
    const full = path.resolve(this.root, key);
    // Keys are built by lib/ from ids, but never let one escape the root.
    if (!full.startsWith(path.resolve(this.root) + path.sep)) throw new Error(`Storage key escapes the root: ${key}`);
    return full;
  }

  async write(key: string, source: Readable, transforms: Transform[], signal?: AbortSignal): Promise<StoredObject> {
    const target = this.resolve(key);
    await mkdir(path.dirname(target), { recursive: true });
    const temp = `${target}.partial-${process.pid}-${Date.now()}`;
    const digest = createDigestStream();
    try {
      await pipeline([source, ...transforms, digest.stream, createWriteStream(temp)], { signal });
      await rename(temp, target);
      return digest.result();
    } catch (err) {
      await rm(temp, { force: true });
      throw err;
    }
  }

  async open(key: string): Promise<{ stream: Readable; size: number } | null> {
    const file = this.resolve(key);
    try {
      const { size } = await stat(file);
      return { stream: createReadStream(file, { highWaterMark: 256 * 1024 }), size };
    } catch {
      return null;
    }
  }

  async delete(key: string): Promise<void> {
    await rm(this.resolve(key), { force: true });
  }
}

let driver: StorageDriver | undefined;

/** The configured storage driver: local disk, or S3 when STORAGE_DRIVER=s3. */
export function storage(): StorageDriver {
  if (!driver) {
    const e = env();
    if (e.STORAGE_DRIVER === "s3") {
      // Loaded only when configured: the AWS SDK is large.
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const { S3Storage } = require("./s3") as typeof import("./s3");
      driver = new S3Storage({
        bucket: e.S3_BUCKET!,
        region: e.S3_REGION,
        endpoint: e.S3_ENDPOINT,
        forcePathStyle: e.S3_FORCE_PATH_STYLE ?? Boolean(e.S3_ENDPOINT),
        accessKeyId: e.S3_ACCESS_KEY_ID,
        secretAccessKey: e.S3_SECRET_ACCESS_KEY,
        prefix: e.S3_PREFIX,
      });
    } else {
      driver = new LocalDiskStorage(exportStorageDir());
    }
  }
  return driver;
}

/** Forgets the driver, so the next use follows the configuration again (tests, benchmarks). */
export function resetStorage(): void {
  driver = undefined;
}
