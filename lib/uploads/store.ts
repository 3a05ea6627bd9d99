/**
 * Where uploads' bytes live while they arrive and until an import is done with
 * them: a tus `FileStore` under `<CONVEYOR_DATA_DIR>/uploads` by default, an
 * `S3Store` with STORAGE_DRIVER=s3 (the S3_* settings of lib/storage, keys
 * under `${S3_PREFIX}uploads/`). Both sit behind one adapter that maps an
 * upload id to its key and offers only what this service uses. Both read
 * from a byte offset (an import's parse continuing after a crash): the file
 * store opens its file there, S3 asks for a Range.
 */
import { createReadStream, mkdirSync } from "node:fs";
import path from "node:path";
import type { Readable } from "node:stream";
import { FileStore } from "@tus/file-store";
import { DataStore, Upload } from "@tus/server";
import { env, uploadStorageDir } from "../env";

/** A tus store that also reads a complete upload back, from its byte `start` on. */
type ReadableStore = DataStore & { read(id: string, start?: number): Readable | Promise<Readable> };

/** tus's FileStore, reading from an offset (its own `read` always starts at 0). */
class RangedFileStore extends FileStore {
  override read(id: string, start = 0): ReturnType<FileStore["read"]> {
    if (start === 0) return super.read(id);
    // (Ids reaching here are upload ids, checked by the service: no path of their own.)
    return createReadStream(path.join(this.directory, id), { start });
  }
}

/**
 * What an upload store offers: the tus DataStore calls (create, write, offset,
 * remove) plus reading the file back, whole or from an offset. Keys are `prefix + id`.
 */
export class UploadStore extends DataStore {
  constructor(
    private readonly inner: ReadableStore,
    private readonly prefix = "",
  ) {
    super();
    // Deferred lengths are refused (an upload declares its size, for the quota) and
    // expiry is ours (UPLOAD_UNUSED_HOURS, by last use), so neither is advertised.
    this.extensions = inner.extensions.filter((e) => e !== "creation-defer-length" && e !== "expiration");
  }

  private key(id: string): string {
    return `${this.prefix}${id}`;
  }

  override async create(upload: Upload): Promise<Upload> {
    const stored = await this.inner.create(
      new Upload({
        id: this.key(upload.id),
        size: upload.size,
        offset: upload.offset,
        metadata: upload.metadata,
        creation_date: upload.creation_date,
      }),
    );
    upload.storage = stored.storage;
    upload.creation_date = stored.creation_date;
    return upload;
  }

  override write(stream: Readable, id: string, offset: number): Promise<number> {
    return this.inner.write(stream, this.key(id), offset);
  }

  override async getUpload(id: string): Promise<Upload> {
    const upload = await this.inner.getUpload(this.key(id));
    upload.id = id;
    return upload;
  }

  override remove(id: string): Promise<void> {
    return this.inner.remove(this.key(id));
  }

  override getExpiration(): number {
    return 0;
  }

  /** The upload's bytes from byte `start` (0: the start) to its end (complete uploads only, for S3). */
  async read(id: string, start = 0): Promise<Readable> {
    return this.inner.read(this.key(id), start);
  }
}

let store: UploadStore | undefined;

/** The configured upload store: local disk, or S3 when STORAGE_DRIVER=s3. */
export function uploadStore(): UploadStore {
  if (!store) {
    const e = env();
    if (e.STORAGE_DRIVER === "s3") {
      // Loaded only when configured: the AWS SDK is large.
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const { S3Store } = require("@tus/s3-store") as typeof import("@tus/s3-store");
      /** tus's S3Store, reading from an offset with a Range GET (its own `read` always starts at 0). */
      class RangedS3Store extends S3Store {
        override async read(id: string, start = 0): Promise<Readable> {
          if (start === 0) return super.read(id);
          const data = await this.client.getObject({ Bucket: this.bucket, Key: id, Range: `bytes=${start}-` });
          return data.Body as Readable;
        }
      }
      const s3 = new RangedS3Store({
        // S3 parts are at least 5 MiB (but the last); 8 MiB like lib/storage's exports.
        partSize: 8 * 1024 * 1024,
        s3ClientConfig: {
          bucket: e.S3_BUCKET!,
          region: e.S3_REGION,
          endpoint: e.S3_ENDPOINT,
          forcePathStyle: e.S3_FORCE_PATH_STYLE ?? Boolean(e.S3_ENDPOINT),
          requestChecksumCalculation: "WHEN_REQUIRED",
          responseChecksumValidation: "WHEN_REQUIRED",
          ...(e.S3_ACCESS_KEY_ID && e.S3_SECRET_ACCESS_KEY
            ? { credentials: { accessKeyId: e.S3_ACCESS_KEY_ID, secretAccessKey: e.S3_SECRET_ACCESS_KEY } }
            : {}),
        },
      });
      store = new UploadStore(s3, `${e.S3_PREFIX ?? ""}uploads/`);
    } else {
      const directory = uploadStorageDir();
      mkdirSync(directory, { recursive: true });
      store = new UploadStore(new RangedFileStore({ directory }));
    }
  }
  return store;
}

/** Forgets the store, so the next use follows the configuration again (tests). */
export function resetUploadStore(): void {
  store = undefined;
}
