/**
 * The chunks of `body` to its end, or `undefined` once they pass `limitBytes` (nothing more is read); a failed read
 * rejects with its error. However it ends, the stream is cancelled: a body cut off, or one whose read failed, closes
 * its connection instead of leaving it to the pool half read, and a hostile or broken peer costs at most the limit.
 */
export async function readBodyUpTo(
  body: ReadableStream<Uint8Array> | null | undefined,
  limitBytes: number,
): Promise<Uint8Array[] | undefined> {
  if (!body) return [];
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const read = await reader.read();
      if (read.done) return chunks;
      size += read.value.byteLength;
      if (size > limitBytes) return undefined;
      chunks.push(read.value);
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}
