import { sign, timingSafeEqual } from "../lib/crypto";

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
 * for another file or stretched past its expiry.
 */
export async function localUploadUrl(secret: string, origin: string, upload: Signed, expiresAt: Date): Promise<string> {
  const expires = Math.floor(expiresAt.getTime() / 1000);
  const url = new URL(`/uploads/${encodeURIComponent(upload.id)}`, origin);
  url.searchParams.set("expires", String(expires));
  url.searchParams.set("sig", await sign(secret, PURPOSE, message(upload, expires)));
  return url.toString();
}

type LocalUrlCheck = "ok" | "invalid" | "expired";

export async function checkLocalUploadUrl(
  secret: string,
  upload: Signed,
  expires: string | undefined,
  sig: string | undefined,
  now = Date.now(),
): Promise<LocalUrlCheck> {
  if (!expires || !sig || !/^\d{1,12}$/.test(expires)) return "invalid";
  const expected = await sign(secret, PURPOSE, message(upload, Number(expires)));
  if (!timingSafeEqual(expected, sig)) return "invalid";
  return Number(expires) * 1000 < now ? "expired" : "ok";
}
