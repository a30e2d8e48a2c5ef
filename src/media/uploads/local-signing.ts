import { sign, verify } from "../../lib/crypto/crypto";
import type { Keyring } from "../../lib/crypto/keyring";

const PURPOSE = "upload-url";

interface Signed {
  id: string;
  contentType: string;
  sizeBytes: number;
}

const message = (u: Signed, expires: number) => `${u.id}\n${expires}\n${u.contentType}\n${u.sizeBytes}`;

/**
 * The Worker's own upload URL, used where no R2 credentials are configured. The
 * signature binds the upload, its expiry, type and size, so the URL cannot be reused
 * for another file or stretched past its expiry. `sig` is `<key id>.<mac>`; a URL signed before
 * the keyring (a bare MAC) is still accepted while some key of the ring signed it.
 */
export async function localUploadUrl(
  keyring: Keyring,
  origin: string,
  upload: Signed,
  expiresAt: Date,
): Promise<string> {
  const expires = Math.floor(expiresAt.getTime() / 1000);
  const url = new URL(`/uploads/${encodeURIComponent(upload.id)}`, origin);
  url.searchParams.set("expires", String(expires));
  url.searchParams.set("sig", await sign(keyring, PURPOSE, message(upload, expires)));
  return url.toString();
}

type LocalUrlCheck = "ok" | "invalid" | "expired";

export async function checkLocalUploadUrl(
  keyring: Keyring,
  upload: Signed,
  expires: string | undefined,
  sig: string | undefined,
  now = Date.now(),
): Promise<LocalUrlCheck> {
  if (!expires || !sig || !/^\d{1,12}$/.test(expires)) return "invalid";
  if (!(await verify(keyring, PURPOSE, message(upload, Number(expires)), sig))) return "invalid";
  return Number(expires) * 1000 < now ? "expired" : "ok";
}

/**
 * Whether a request to the Worker's upload URL carries a valid signature for the upload
 * and the Content-Type and Content-Length it sends: what a genuine upload sends is what
 * was signed, so this needs no D1 lookup (an expired one still verifies).
 */
export async function vouchesForUpload(
  keyring: Keyring,
  request: { id: string; contentType: string | undefined; contentLength: string | undefined },
  expires: string | undefined,
  sig: string | undefined,
): Promise<boolean> {
  const sizeBytes = Number(request.contentLength);
  if (!request.contentType || !Number.isSafeInteger(sizeBytes)) return false;
  const signed = { id: request.id, contentType: request.contentType, sizeBytes };
  return (await checkLocalUploadUrl(keyring, signed, expires, sig, 0)) !== "invalid";
}

const PART_PURPOSE = "upload-part-url";

interface SignedPart {
  id: string;
  contentType: string;
  partNumber: number;
  partBytes: number;
}

const partMessage = (p: SignedPart, expires: number) =>
  `${p.id}\n${p.partNumber}\n${expires}\n${p.contentType}\n${p.partBytes}`;

/** The Worker's own URL for one part of a multipart upload: bound to the upload, part number, size, type and expiry. */
export async function localPartUrl(keyring: Keyring, origin: string, part: SignedPart, expiresAt: Date) {
  const expires = Math.floor(expiresAt.getTime() / 1000);
  const url = new URL(`/uploads/${encodeURIComponent(part.id)}/parts/${part.partNumber}`, origin);
  url.searchParams.set("expires", String(expires));
  url.searchParams.set("sig", await sign(keyring, PART_PURPOSE, partMessage(part, expires)));
  return url.toString();
}

export async function checkLocalPartUrl(
  keyring: Keyring,
  part: SignedPart,
  expires: string | undefined,
  sig: string | undefined,
  now = Date.now(),
): Promise<LocalUrlCheck> {
  if (!expires || !sig || !/^\d{1,12}$/.test(expires)) return "invalid";
  if (!(await verify(keyring, PART_PURPOSE, partMessage(part, Number(expires)), sig))) return "invalid";
  return Number(expires) * 1000 < now ? "expired" : "ok";
}

/** Like `vouchesForUpload`, for one part: the upload, part number, type and size as the request sends them. */
export async function vouchesForPart(
  keyring: Keyring,
  request: { id: string; partNumber: number; contentType: string | undefined; contentLength: string | undefined },
  expires: string | undefined,
  sig: string | undefined,
): Promise<boolean> {
  const partBytes = Number(request.contentLength);
  if (!request.contentType || !Number.isSafeInteger(partBytes) || !Number.isInteger(request.partNumber)) return false;
  const part = { id: request.id, contentType: request.contentType, partNumber: request.partNumber, partBytes };
  return (await checkLocalPartUrl(keyring, part, expires, sig, 0)) !== "invalid";
}
