/**
 * Reads a byte stream to its end, holding at most `limit` bytes: past the cap the stream
 * is cancelled (its rest is never read) and the answer is `undefined`. Request bodies and
 * the bodies of outbound responses both go through here, so no body is ever buffered
 * without bound, whether or not its sender declared a length.
 */
export async function readCapped(
  stream: ReadableStream<Uint8Array> | null | undefined,
  limit: number,
): Promise<Uint8Array | undefined> {
  if (!stream) return new Uint8Array(0);
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  // Every useful read adds at least one byte, so a well-behaved stream ends within limit + 1 reads;
  // the bound also stops a stream that keeps yielding empty chunks.
  for (let reads = 0; ; reads++) {
    if (reads > limit + 1) {
      await reader.cancel().catch(() => {});
      return undefined;
    }
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      await reader.cancel().catch(() => {});
      return undefined;
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return chunks[0]!;
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}

/** The byte offset of the first sequence that is not well-formed UTF-8, or -1 when there is none. */
export function invalidUtf8Offset(bytes: Uint8Array): number {
  const fatal = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
  for (let i = 0; i < bytes.length; ) {
    const lead = bytes[i]!;
    const n = lead < 0x80 ? 1 : lead < 0xc2 ? 0 : lead < 0xe0 ? 2 : lead < 0xf0 ? 3 : lead < 0xf5 ? 4 : 0;
    if (n === 0 || i + n > bytes.length) return i;
    if (n > 1) {
      try {
        fatal.decode(bytes.subarray(i, i + n));
      } catch {
        return i;
      }
    }
    i += n;
  }
  return -1;
}
