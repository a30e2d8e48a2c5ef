import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { base64, base64url, fromBase64url, hex } from "../../src/lib/crypto/encoding";

/**
 * Byte arrays of any length up to past two of the encoder's chunks, so every chunk boundary
 * and every padding case is met: a length and a seed, the bytes drawn from the seed (a
 * failure shrinks and prints the length, not thousands of bytes).
 */
const arrays = fc.record({ length: fc.nat({ max: 20_000 }), seed: fc.nat() });
function bytesOf({ length, seed }: { length: number; seed: number }): Uint8Array {
  const out = new Uint8Array(length);
  let x = seed | 1;
  for (let i = 0; i < length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

describe("byte encodings", () => {
  it("hex, base64 and base64url agree with Node's own encoders for any bytes", () => {
    fc.assert(
      fc.property(arrays, (a) => {
        const b = bytesOf(a);
        const reference = Buffer.from(b);
        return (
          hex(b) === reference.toString("hex") &&
          base64(b) === reference.toString("base64") &&
          base64url(b) === reference.toString("base64url")
        );
      }),
      { numRuns: 100 },
    );
  });

  it("fromBase64url gives back the bytes base64url encoded", () => {
    fc.assert(
      fc.property(arrays, (a) => {
        const b = bytesOf(a);
        return Buffer.from(fromBase64url(base64url(b))).equals(Buffer.from(b));
      }),
      { numRuns: 100 },
    );
  });

  it("every byte value survives both ways, the ones past 0x7f included", () => {
    const all = Uint8Array.from({ length: 256 }, (_, i) => i);
    expect(fromBase64url(base64url(all))).toEqual(all);
    expect(hex(all).slice(-4)).toBe("feff");
  });
});
