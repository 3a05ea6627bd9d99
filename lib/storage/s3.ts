/**
 * The S3-compatible storage driver (AWS S3, MinIO, R2, Ceph…): a write is one
 * multipart upload, which S3 makes visible only when it completes, so a reader
 * never sees a partial object and a retried attempt overwrites cleanly.
 */
import { PassThrough, type Readable, type Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import {
  DeleteObjectCommand,
  GetObjectCommand,
  NoSuchKey,
  NotFound,
  S3Client,
  type S3ClientConfig,
} from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import { abandonSource, createDigestStream, type ByteRange, type StorageDriver, type StoredObject } from "./driver";

export type S3StorageOptions = {
  bucket: string;
  region: string;
  /** For S3-compatible servers; unset for AWS. */
  endpoint?: string;
  forcePathStyle?: boolean;
  accessKeyId?: string;
  secretAccessKey?: string;
  /** Prepended to every key. */
  prefix?: string;
};

export class S3Storage implements StorageDriver {
  private readonly client: S3Client;

  constructor(private readonly opts: S3StorageOptions) {
    const config: S3ClientConfig = {
      region: opts.region,
      endpoint: opts.endpoint,
      forcePathStyle: opts.forcePathStyle,
      // Checksums only where S3 requires them: S3-compatible servers differ on the newer trailers.
      requestChecksumCalculation: "WHEN_REQUIRED",
      responseChecksumValidation: "WHEN_REQUIRED",
    };
    if (opts.accessKeyId && opts.secretAccessKey) {
      config.credentials = { accessKeyId: opts.accessKeyId, secretAccessKey: opts.secretAccessKey };
    }
    this.client = new S3Client(config);
  }

  private key(key: string): string {
    return `${this.opts.prefix ?? ""}${key}`;
  }

  async write(key: string, source: Readable, transforms: Transform[], signal?: AbortSignal): Promise<StoredObject> {
    const digest = createDigestStream();
    const body = new PassThrough({ highWaterMark: 1024 * 1024 });
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.opts.bucket, Key: this.key(key), Body: body },
      partSize: 8 * 1024 * 1024,
      queueSize: 2,
    });
    const abort = () => void upload.abort().catch(() => {});
    signal?.addEventListener("abort", abort, { once: true });
    try {
      await Promise.all([pipeline([source, ...transforms, digest.stream, body], { signal }), upload.done()]);
      return digest.result();
    } catch (err) {
      abort();
      body.destroy();
      throw abandonSource(source, err);
    } finally {
      signal?.removeEventListener("abort", abort);
    }
  }

  async open(key: string, range?: ByteRange): Promise<{ stream: Readable; size: number } | null> {
    try {
      const res = await this.client.send(
        new GetObjectCommand({
          Bucket: this.opts.bucket,
          Key: this.key(key),
          ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}),
        }),
      );
      if (!res.Body) return null;
      return { stream: res.Body as Readable, size: Number(res.ContentLength ?? 0) };
    } catch (err) {
      if (err instanceof NoSuchKey || err instanceof NotFound) return null;
      if ((err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 404) return null;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.opts.bucket, Key: this.key(key) }));
  }
}
