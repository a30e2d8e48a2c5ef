/** SigV4 recomputed from the URL alone, with nothing from aws4fetch. */
export async function expectedSignature(url: URL, method: string, headers: Record<string, string>, secret: string) {
  const enc = new TextEncoder();
  const hex = (b: ArrayBuffer) => [...new Uint8Array(b)].map((x) => x.toString(16).padStart(2, "0")).join("");
  const hmac = async (key: ArrayBuffer | Uint8Array, msg: string) =>
    crypto.subtle.sign(
      "HMAC",
      await crypto.subtle.importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]),
      enc.encode(msg),
    );
  const rfc3986 = (s: string) =>
    encodeURIComponent(s).replace(/[!'()*]/g, (ch) => `%${ch.charCodeAt(0).toString(16).toUpperCase()}`);
  const params = [...url.searchParams].filter(([k]) => k !== "X-Amz-Signature");
  const query = params
    .map(([k, v]) => [rfc3986(k), rfc3986(v)])
    .sort(([a], [b]) => (a! < b! ? -1 : a! > b! ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join("&");
  const signedHeaders = url.searchParams.get("X-Amz-SignedHeaders")!.split(";");
  const all: Record<string, string> = {
    host: url.host,
    ...Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v])),
  };
  const path = url.pathname
    .split("/")
    .map((segment) => rfc3986(decodeURIComponent(segment)))
    .join("/");
  const canonical = [
    method,
    path,
    query,
    signedHeaders.map((h) => `${h}:${all[h]}\n`).join(""),
    signedHeaders.join(";"),
    "UNSIGNED-PAYLOAD",
  ].join("\n");
  const date = url.searchParams.get("X-Amz-Date")!;
  const scope = url.searchParams.get("X-Amz-Credential")!.split("/").slice(1).join("/");
  const toSign = [
    "AWS4-HMAC-SHA256",
    date,
    scope,
    hex(await crypto.subtle.digest("SHA-256", enc.encode(canonical))),
  ].join("\n");
  const [day, region, service] = scope.split("/");
  let key = await hmac(enc.encode(`AWS4${secret}`), day!);
  for (const part of [region!, service!, "aws4_request"]) key = await hmac(key, part);
  return hex(await hmac(key, toSign));
}
