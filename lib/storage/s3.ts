/**
 * The S3-compatible storage driver (AWS S3, MinIO, R2, Ceph…): a write is one
 * multipart upload, which S3 makes visible only when it completes, so a reader
 * never sees a partial object and a retried attempt overwrites cleanly. A
 * segmented write is one multipart upload too, its pieces cut at segment ends
 * (so a checkpoint can name them) and continued by the next attempt.
 */
import { createHash, type Hash } from "node:crypto";
import { PassThrough, Writable, type Readable, type Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  ListPartsCommand,
  NoSuchKey,
  NotFound,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
  type S3ClientConfig,
} from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import {
  abandonSource,
  createDigestStream,
  SegmentsLostError,
  type ByteRange,
  type SegmentedWrite,
  type SegmentState,
  type StorageDriver,
  type StoredObject,
} from "./driver";

/** S3's smallest piece of a multipart upload, but for the last. */
const PIECE_MIN = 5 * 1024 * 1024;
/** The pieces a long segment is cut into while it streams (it keeps at least PIECE_MIN back for its end). */
const PIECE_SIZE = 8 * 1024 * 1024;

type S3State = Extract<SegmentState, { driver: "s3" }>;
type Piece = S3State["pieces"][number];

/** An S3 error meaning the multipart upload is gone (completed, aborted, or expired by a lifecycle rule). */
const isUploadGone = (err: unknown) => (err as { name?: string } | null)?.name === "NoSuchUpload";

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

  async discardSegments(state: SegmentState): Promise<void> {
    if (state.driver !== "s3") return;
    try {
      await this.client.send(
        new AbortMultipartUploadCommand({
          Bucket: this.opts.bucket,
          Key: this.objectKey(state.key),
          UploadId: state.uploadId,
        }),
      );
    } catch (err) {
      // Aborted or expired already (the bucket's lifecycle rule may end stale uploads first).
      if (!isUploadGone(err)) throw err;
    }
  }

  async segmented(key: string, resume?: SegmentState): Promise<SegmentedWrite> {
    const bucket = this.opts.bucket;
    if (resume) {
      if (resume.driver !== "s3") throw new SegmentsLostError(`A ${resume.driver} write cannot continue on S3`);
      await this.checkPieces(resume);
      return new S3SegmentedWrite(this, this.client, bucket, resume.key, resume.uploadId, resume.pieces, resume.size);
    }
    const made = await this.client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: this.key(key) }));
    if (!made.UploadId) throw new Error(`S3 gave no upload id for ${key}`);
    return new S3SegmentedWrite(this, this.client, bucket, key, made.UploadId, [], 0);
  }

  /**
   * The upload a saved state names still holds its pieces (S3's ListParts, page by page); a
   * server without ListParts (s3rver) is trusted, and a gone upload is found at the first piece.
   */
  private async checkPieces(state: S3State): Promise<void> {
    const found = new Map<number, string>();
    let marker: string | undefined;
    try {
      for (;;) {
        const page = await this.client.send(
          new ListPartsCommand({
            Bucket: this.opts.bucket,
            Key: this.key(state.key),
            UploadId: state.uploadId,
            PartNumberMarker: marker,
          }),
        );
        for (const p of page.Parts ?? []) found.set(p.PartNumber ?? 0, (p.ETag ?? "").replace(/"/g, ""));
        if (!page.IsTruncated) break;
        marker = page.NextPartNumberMarker;
      }
    } catch (err) {
      if (isUploadGone(err)) throw new SegmentsLostError(`The upload of ${state.key} is gone`);
      // A server without ListParts (s3rver answers 405 MethodNotAllowed): trusted, see above.
      const name = (err as { name?: string }).name;
      if (name === "NotImplemented" || name === "MethodNotAllowed") return;
      throw err;
    }
    const missing = state.pieces.find((p) => found.get(p.n) !== p.etag.replace(/"/g, ""));
    if (missing) throw new SegmentsLostError(`Piece ${missing.n} of the upload of ${state.key} is gone or changed`);
  }

  /** Prefixes a key, for the segmented writer. */
  objectKey(key: string): string {
    return this.key(key);
  }
}

/**
 * A multipart upload written segment by segment. Bytes gather in memory; while a segment streams,
 * every PIECE_SIZE beyond PIECE_MIN goes up as a piece, and at the segment's end what is left goes
 * up too if it is at least PIECE_MIN — then the pieces end with the segment and it is committed.
 * A smaller rest is carried into the next segment (no checkpoint until one closes a piece). Pieces
 * uploaded after the last committed segment are overwritten by the attempt that continues (it
 * numbers its pieces from the state's), and Complete names each piece's ETag, so a stale attempt's
 * piece is never silently taken. The memory held is under PIECE_SIZE + PIECE_MIN plus one chunk.
 */
class S3SegmentedWrite implements SegmentedWrite {
  private readonly pieces: Piece[];
  private buffer: Buffer[] = [];
  private buffered = 0;
  private size: number;
  private committed: { pieces: Piece[]; size: number };
  /** Null when continuing: a hash's state does not outlive its process, so the object is read back. */
  private readonly hash: Hash | null;
  private broken: Error | null = null;

  constructor(
    private readonly driver: S3Storage,
    private readonly client: S3Client,
    private readonly bucket: string,
    private readonly key: string,
    private readonly uploadId: string,
    pieces: Piece[],
    size: number,
  ) {
    this.pieces = [...pieces];
    this.size = size;
    this.committed = { pieces: [...pieces], size };
    this.hash = pieces.length === 0 && size === 0 ? createHash("sha256") : null;
  }

  async append(source: Readable, transforms: Transform[], signal?: AbortSignal): Promise<{ committed: boolean }> {
    try {
      if (this.broken) throw this.broken;
      const sink = new Writable({
        highWaterMark: 1024 * 1024,
        write: (chunk: Buffer, _enc, cb) => {
          this.buffer.push(chunk);
          this.buffered += chunk.length;
          this.size += chunk.length;
          this.hash?.update(chunk);
          this.drain().then(() => cb(), cb);
        },
      });
      await pipeline([source, ...transforms, sink], { signal });
      if (this.buffered < PIECE_MIN) return { committed: false };
      await this.upload(this.buffered);
      this.committed = { pieces: [...this.pieces], size: this.size };
      return { committed: true };
    } catch (err) {
      const cause = isUploadGone(err) ? new SegmentsLostError(`The upload of ${this.key} is gone`) : err;
      this.broken ??= cause instanceof Error ? cause : new Error(String(cause));
      throw abandonSource(source, cause);
    }
  }

  /** Uploads PIECE_SIZE pieces while more than PIECE_MIN would be left. */
  private async drain(): Promise<void> {
    while (this.buffered >= PIECE_SIZE + PIECE_MIN) await this.upload(PIECE_SIZE);
  }

  /** Uploads the first `bytes` buffered as the next piece. */
  private async upload(bytes: number): Promise<void> {
    const all = this.buffer.length === 1 ? this.buffer[0]! : Buffer.concat(this.buffer, this.buffered);
    const body = all.subarray(0, bytes);
    const rest = all.subarray(bytes);
    const n = this.pieces.length + 1;
    const res = await this.client.send(
      new UploadPartCommand({
        Bucket: this.bucket,
        Key: this.driver.objectKey(this.key),
        UploadId: this.uploadId,
        PartNumber: n,
        Body: body,
        ContentLength: body.length,
      }),
    );
    this.pieces.push({ n, etag: res.ETag ?? "", size: body.length });
    this.buffer = rest.length ? [rest] : [];
    this.buffered = rest.length;
  }

  state(): SegmentState {
    const { pieces, size } = this.committed;
    return { driver: "s3", key: this.key, uploadId: this.uploadId, size, pieces };
  }

  async finish(): Promise<StoredObject & { key: string }> {
    if (this.broken) throw this.broken;
    const Key = this.driver.objectKey(this.key);
    try {
      if (this.size === 0) {
        // S3 completes no upload without a piece: an empty file is put whole.
        await this.abandon();
        await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key, Body: Buffer.alloc(0) }));
      } else {
        if (this.buffered > 0) await this.upload(this.buffered);
        await this.client.send(
          new CompleteMultipartUploadCommand({
            Bucket: this.bucket,
            Key,
            UploadId: this.uploadId,
            MultipartUpload: { Parts: this.pieces.map((p) => ({ PartNumber: p.n, ETag: p.etag })) },
          }),
        );
      }
    } catch (err) {
      throw isUploadGone(err) ? new SegmentsLostError(`The upload of ${this.key} is gone`) : err;
    }
    return { key: this.key, size: this.size, sha256: this.hash ? this.hash.digest("hex") : await this.readBack() };
  }

  /** The sha256 of the completed object, read once (a continued upload's hash could not be carried over). */
  private async readBack(): Promise<string> {
    const obj = await this.driver.open(this.key);
    if (!obj) throw new Error(`The completed object ${this.key} cannot be read`);
    const hash = createHash("sha256");
    for await (const chunk of obj.stream) hash.update(chunk as Buffer);
    return hash.digest("hex");
  }

  async abandon(): Promise<void> {
    await this.client
      .send(
        new AbortMultipartUploadCommand({
          Bucket: this.bucket,
          Key: this.driver.objectKey(this.key),
          UploadId: this.uploadId,
        }),
      )
      .catch(() => {});
  }
}
