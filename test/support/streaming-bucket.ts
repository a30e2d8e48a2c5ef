/**
 * A stand-in for the uploads bucket's multipart storage that holds no bytes: each part is
 * read to its end as it arrives, a chunk at a time, and only its size and a check of its
 * content are kept; the joined object is made again, part by part, when it is read. It
 * lets a test move gigabytes through the Worker's real part path in seconds, where the
 * local R2 simulator stores about 12 MB/s. Every other call goes to the real bucket.
 */
export interface StreamingBucket {
  bucket: R2Bucket;
  /** Bytes received per part number, across every upload. */
  received: Map<number, number>;
  /** How many parts arrived whole, and how many streams failed or were cut short. */
  stats: { partsStored: number; partsFailed: number; completions: number; bytesRead: number };
}

interface Part {
  size: number;
  etag: string;
  fill: number;
}

/**
 * Reads a byte stream to its end into one reused 4 MiB buffer (a BYOB reader: the runtime's
 * streams otherwise hand bytes over 4 KiB at a time) and answers how many bytes it held.
 */
export async function drain(stream: ReadableStream<Uint8Array>, each: (chunk: Uint8Array) => void = () => {}) {
  const reader = stream.getReader({ mode: "byob" });
  let buffer = new Uint8Array(4 * 1024 * 1024);
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read(buffer);
    if (done || !value) break;
    if (value.byteLength) each(value);
    size += value.byteLength;
    buffer = new Uint8Array(value.buffer);
  }
  return size;
}

/** `fillOf(n)` is the byte every position of part n holds; a part whose bytes differ is refused like a bad body. */
export function streamingBucket(real: R2Bucket, fillOf: (n: number) => number): StreamingBucket {
  const uploads = new Map<string, { key: string; contentType?: string; parts: Map<number, Part>; done: boolean }>();
  const objects = new Map<string, { size: number; etag: string; parts: Part[]; contentType?: string }>();
  const received = new Map<number, number>();
  const stats = { partsStored: 0, partsFailed: 0, completions: 0, bytesRead: 0 };
  let seq = 0;

  const objectOf = (key: string, o: { size: number; etag: string; contentType?: string }) =>
    ({
      key,
      size: o.size,
      etag: o.etag,
      httpEtag: `"${o.etag}"`,
      uploaded: new Date(),
      httpMetadata: { contentType: o.contentType },
      customMetadata: {},
      version: o.etag,
      checksums: {},
      storageClass: "Standard",
      writeHttpMetadata() {},
    }) as unknown as R2Object;

  const multipart = (key: string, uploadId: string): R2MultipartUpload => ({
    key,
    uploadId,
    async uploadPart(partNumber: number, value: unknown) {
      const upload = uploads.get(uploadId);
      if (!upload || upload.done) throw new Error("NoSuchUpload");
      let size = 0;
      try {
        size = await drain(value as ReadableStream<Uint8Array>, (chunk) => {
          if (chunk[0] !== fillOf(partNumber) || chunk[chunk.length - 1] !== fillOf(partNumber))
            throw new Error(`part ${partNumber} holds bytes of another part`);
        });
      } catch (err) {
        stats.partsFailed++;
        throw err;
      }
      stats.partsStored++;
      received.set(partNumber, size);
      const etag = `part-${partNumber}-${++seq}`;
      upload.parts.set(partNumber, { size, etag, fill: fillOf(partNumber) });
      return { partNumber, etag };
    },
    async abort() {
      const upload = uploads.get(uploadId);
      if (upload) upload.done = true;
    },
    async complete(list: R2UploadedPart[]) {
      const upload = uploads.get(uploadId);
      if (!upload || upload.done) throw new Error("NoSuchUpload");
      const parts = list.map((p) => {
        const part = upload.parts.get(p.partNumber);
        if (!part || part.etag !== p.etag) throw new Error("InvalidPart");
        return part;
      });
      // As R2: every part but the last of one size, the last no larger.
      const size0 = parts[0]!.size;
      if (parts.slice(0, -1).some((p) => p.size !== size0) || parts.at(-1)!.size > size0) throw new Error("BadUpload");
      upload.done = true;
      stats.completions++;
      const object = {
        size: parts.reduce((sum, p) => sum + p.size, 0),
        etag: `joined-${++seq}`,
        parts,
        contentType: upload.contentType,
      };
      objects.set(key, object);
      return objectOf(key, object);
    },
  });

  const joined = (parts: Part[]) => {
    let i = 0;
    let left = parts[0]?.size ?? 0;
    return new ReadableStream<Uint8Array>({
      pull(ctrl) {
        while (left === 0 && i < parts.length - 1) left = parts[++i]!.size;
        if (left === 0) return ctrl.close();
        const len = Math.min(4 * 1024 * 1024, left);
        left -= len;
        stats.bytesRead += len;
        ctrl.enqueue(new Uint8Array(len).fill(parts[i]!.fill));
      },
    });
  };

  const bucket = new Proxy(real, {
    get(target, prop) {
      if (prop === "createMultipartUpload")
        return async (key: string, opts?: R2MultipartOptions) => {
          const uploadId = `mpu-${++seq}`;
          uploads.set(uploadId, {
            key,
            contentType: (opts?.httpMetadata as R2HTTPMetadata | undefined)?.contentType,
            parts: new Map(),
            done: false,
          });
          return multipart(key, uploadId);
        };
      if (prop === "resumeMultipartUpload") return (key: string, uploadId: string) => multipart(key, uploadId);
      if (prop === "head")
        return async (key: string) => {
          const o = objects.get(key);
          return o ? objectOf(key, o) : target.head(key);
        };
      if (prop === "get")
        return async (key: string, opts?: R2GetOptions) => {
          const o = objects.get(key);
          if (!o) return target.get(key, opts);
          const wanted = (opts?.onlyIf as R2Conditional | undefined)?.etagMatches;
          if (wanted && wanted !== o.etag) return objectOf(key, o);
          return Object.assign(objectOf(key, o), { body: joined(o.parts) });
        };
      if (prop === "delete")
        return async (keys: string | string[]) => {
          for (const k of Array.isArray(keys) ? keys : [keys]) objects.delete(k);
          return target.delete(keys);
        };
      const member = Reflect.get(target, prop);
      return typeof member === "function" ? member.bind(target) : member;
    },
  });
  return { bucket, received, stats };
}
