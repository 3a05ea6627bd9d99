/**
 * `COPY … TO STDOUT` as a stream that also counts the rows it has passed on,
 * from the protocol's message boundaries: Postgres sends every row of a COPY
 * out as one `CopyData` message (and CSV's header line as one more), so the
 * count costs one increment per row instead of a scan of every byte (which
 * was most of what the export added to bare gzip).
 *
 * pg-copy-streams parses the messages; it exposes no per-message hook, so this
 * counts the message-type bytes it reads (`_buffer.readUInt8`, read once per
 * message). Should a later version read them otherwise, `counted` is false and
 * the caller counts bytes instead (lib/exports/row-counter.ts).
 */
import type { Readable } from "node:stream";
import { to as copyTo, type CopyToStreamQuery } from "pg-copy-streams";

const COPY_DATA = 0x64; // 'd'

type MessageBuffer = { readUInt8(): number };

export type CountingCopy = {
  stream: CopyToStreamQuery;
  /** CopyData messages passed on so far (rows, plus CSV's header line). */
  messages(): number;
  /** False when this version of pg-copy-streams could not be hooked: count bytes instead. */
  counted: boolean;
  /** Calls `fn` with the message count each time a batch of rows is pushed downstream. */
  onPush(fn: (messages: number) => void): void;
};

export function countingCopyTo(statement: string): CountingCopy {
  const stream = copyTo(statement);
  let messages = 0;
  const internals = stream as unknown as { _buffer?: MessageBuffer };
  const buffer = internals._buffer;
  const counted = typeof buffer?.readUInt8 === "function";
  if (counted) {
    const read = buffer.readUInt8.bind(buffer);
    buffer.readUInt8 = () => {
      const code = read();
      if (code === COPY_DATA) messages++;
      return code;
    };
  }
  return {
    stream,
    messages: () => messages,
    counted,
    onPush(fn) {
      // push() runs once per socket read (many rows), after the messages it carries were counted.
      const readable = stream as Readable;
      const push = readable.push.bind(readable);
      readable.push = (chunk: unknown, encoding?: BufferEncoding) => {
        if (chunk !== null) fn(messages);
        return push(chunk, encoding);
      };
    },
  };
}
