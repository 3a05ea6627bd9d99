/** Response headers for an SSE stream. */
export const sseHeaders = {
  "Content-Type": "text/event-stream; charset=utf-8",
  "Cache-Control": "no-cache, no-transform",
  Connection: "keep-alive",
  // Proxies such as nginx must not buffer the stream.
  "X-Accel-Buffering": "no",
};
