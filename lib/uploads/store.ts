/**
 * Where uploads' bytes live while they arrive and until an import is done with
 * them: a tus `FileStore` under `<CONVEYOR_DATA_DIR>/uploads` by default, an
 * `S3Store` with STORAGE_DRIVER=s3 (the S3_* settings of lib/storage, keys
 * under `${S3_PREFIX}uploads/`). Both sit behind one adapter that maps an
 * upload id to its key and offers only what this service uses.
 */
import { mkdirSync } from "node:fs";
import type { Readable } from "node:stream";
import { FileStore } from "@tus/file-store";
import { DataStore, Upload } from "@tus/server";
import { env, uploadStorageDir } from "../env";

/**
 * What an upload store offers: the tus DataStore calls (create, write, offset,
 * remove) plus reading the whole file back. Keys are `prefix + id`.
 */
export class UploadStore extends DataStore {
  constructor(
    private readonly inner: DataStore & { read(id: string): Readable | Promise<Readable> },
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

  /** The upload's bytes from the start (complete uploads only, for S3). */
  async read(id: string): Promise<Readable> {
    return this.inner.read(this.key(id));
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
      const s3 = new S3Store({
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
      store = new UploadStore(new FileStore({ directory }));
    }
  }
  return store;
}

/** Forgets the store, so the next use follows the configuration again (tests). */
export function resetUploadStore(): void {
  store = undefined;
}
