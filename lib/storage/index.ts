/**
 * The storage factory: the configured driver — local disk (./local.ts) by
 * default, an S3-compatible bucket (./s3.ts) with STORAGE_DRIVER=s3.
 */
import { env, exportStorageDir } from "../env";
import { withSpan } from "../tracing";
import type { StorageDriver } from "./driver";
import { LocalDiskStorage } from "./local";

/** Makes a driver's writes spans (`storage.write`) of the active trace: an export's upload, an import's files. */
function traceWrites<D extends StorageDriver>(inner: D, name: string): D {
  const write = inner.write.bind(inner);
  inner.write = (key, source, transforms, signal) =>
    withSpan("storage.write", { "conveyor.storage.driver": name, "conveyor.storage.key": key }, async (span) => {
      const stored = await write(key, source, transforms, signal);
      span.setAttribute("conveyor.storage.bytes", stored.size);
      return stored;
    });
  return inner;
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
      driver = traceWrites(
        new S3Storage({
          bucket: e.S3_BUCKET!,
          region: e.S3_REGION,
          endpoint: e.S3_ENDPOINT,
          forcePathStyle: e.S3_FORCE_PATH_STYLE ?? Boolean(e.S3_ENDPOINT),
          accessKeyId: e.S3_ACCESS_KEY_ID,
          secretAccessKey: e.S3_SECRET_ACCESS_KEY,
          prefix: e.S3_PREFIX,
        }),
        "s3",
      );
    } else {
      driver = traceWrites(new LocalDiskStorage(exportStorageDir()), "local");
    }
  }
  return driver;
}

/** Forgets the driver, so the next use follows the configuration again (tests, benchmarks). */
export function resetStorage(): void {
  driver = undefined;
}
