import type { Context, MiddlewareHandler } from "hono";
import { invalidUtf8Offset, readCapped } from "../lib/capped-read";
import { DomainError } from "../lib/errors";
import type { AppEnv } from "./env";

/**
 * Deployed environments refuse plain HTTP before anything else runs, so a key sent over
 * an unencrypted connection is never read. The scheme comes from the request URL alone
 * (on Cloudflare, the scheme the client connected with); a header such as `CF-Visitor`
 * could be sent by the client itself and is never consulted.
 */
export function httpsOnly(): MiddlewareHandler<AppEnv> {
  return async function httpsOnly(c, next) {
    if (c.env.ENVIRONMENT !== "local" && new URL(c.req.url).protocol !== "https:") {
      throw new DomainError("https_required");
    }
    await next();
  };
}

/** The JSON body limit of a route that declares none (`Guard.bodyLimit` raises it where a body needs more). */
export const DEFAULT_BODY_LIMIT = 64 * 1024;
/** What a route that takes no body accepts: room for an empty `{}`, which it ignores. */
export const NO_BODY_LIMIT = 1024;
/** JSON bodies nest at most this deep; the service's own request schemas need three levels. */
export const MAX_JSON_DEPTH = 64;

/**
 * The route's body limit, enforced before anything else touches the body: a declared
 * Content-Length above it is refused without reading a byte, and any other body (chunked
 * included) is read through the cap now and kept, so the idempotency hash, the JSON checks
 * and the schema validator all see the same bytes, read once.
 */
export function bodyLimit(limit: number): MiddlewareHandler<AppEnv> {
  return async function bodyLimit(c, next) {
    c.set("bodyLimit", limit);
    await readBody(c, limit);
    await next();
  };
}

/** Hono's body cache holds promises of each representation it has read. */
/**
 * The JSON body the route's body check has already read, parsed (undefined when it read
 * none): for steps that look at the body before the handler without reading the stream.
 */
export async function checkedJsonBody(c: Context<AppEnv>): Promise<unknown> {
  const text = bodyCache(c).text;
  return text === undefined ? undefined : JSON.parse(await text);
}

const bodyCache = (c: Context<AppEnv>) =>
  c.req.bodyCache as unknown as { arrayBuffer?: Promise<ArrayBuffer>; text?: Promise<string> };

const exactBuffer = (bytes: Uint8Array): ArrayBuffer =>
  bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength
    ? (bytes.buffer as ArrayBuffer)
    : (bytes.slice().buffer as ArrayBuffer);

/**
 * The request body, read at most once and never past `limit` bytes (413
 * `request_body_too_large` above it). The bytes stay in Hono's body cache, so a later
 * `c.req.text()` or `c.req.json()` answers from them instead of the spent stream.
 */
export async function readBody(
  c: Context<AppEnv>,
  limit = c.get("bodyLimit") ?? DEFAULT_BODY_LIMIT,
): Promise<Uint8Array> {
  let cached = bodyCache(c).arrayBuffer;
  if (!cached) {
    const declared = Number(c.req.header("content-length"));
    if (declared > limit) throw tooLarge(limit);
    // Cached while it is read: a second reader (the body limit after an early idempotency
    // claim) waits on the same read, and meets its refusal too.
    cached = readCapped(c.req.raw.body, limit).then((bytes) => {
      if (!bytes) throw tooLarge(limit);
      return exactBuffer(bytes);
    });
    bodyCache(c).arrayBuffer = cached;
  }
  const bytes = new Uint8Array(await cached);
  const event = c.get("event");
  if (event) event.bodyBytes = bytes.byteLength;
  if (bytes.byteLength > limit) throw tooLarge(limit);
  return bytes;
}

/** The body as text (invalid UTF-8 replaced, as `c.req.text()` would), read through the cap. */
export async function readBodyText(c: Context<AppEnv>, limit?: number): Promise<string> {
  return new TextDecoder().decode(await readBody(c, limit));
}

const isJsonBlank = (bytes: Uint8Array) => bytes.every((b) => b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d);

/**
 * The wire checks of a JSON body, in the order a client can act on them: size (413),
 * presence (400 `request_body_empty`), media type (415), encoding, nesting and syntax
 * (400). The text is left in Hono's body cache, so the schema validator that follows
 * reads it without a second stream read.
 */
export function jsonBody(): MiddlewareHandler<AppEnv> {
  return async function jsonBody(c, next) {
    const bytes = await readBody(c);
    if (isJsonBlank(bytes)) throw new DomainError("request_body_empty");
    const mediaType = (c.req.header("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
    if (!/^application\/([\w.-]+\+)?json$/.test(mediaType)) {
      throw new DomainError("request_content_type_mismatch", {
        details: { received: mediaType || null, accepted: ["application/json"] },
      });
    }
    let text: string;
    try {
      text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
    } catch {
      const offset = invalidUtf8Offset(bytes);
      throw new DomainError("request_body_not_json", {
        message: `The body is not valid UTF-8 (first invalid byte at offset ${offset}); send JSON encoded as UTF-8.`,
        details: { parse_error_position: offset, encoding: "utf-8" },
      });
    }
    const tooDeepAt = nestingPastDepth(text, MAX_JSON_DEPTH);
    if (tooDeepAt >= 0) {
      throw new DomainError("request_body_too_deep", {
        message: `The JSON body nests deeper than ${MAX_JSON_DEPTH} levels (at position ${tooDeepAt}).`,
        details: { max_depth: MAX_JSON_DEPTH, parse_error_position: tooDeepAt },
      });
    }
    try {
      JSON.parse(text);
    } catch (e) {
      throw notJson(e, text);
    }
    bodyCache(c).text = Promise.resolve(text);
    await next();
  };
}

/**
 * Where an array or object opens past `maxDepth` levels, or -1: a scan of the text
 * before it is parsed, so a hostile nesting is refused without building anything.
 */
function nestingPastDepth(text: string, maxDepth: number): number {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 0x5c) i++;
      else if (ch === 0x22) inString = false;
    } else if (ch === 0x22) inString = true;
    else if (ch === 0x5b || ch === 0x7b) {
      if (++depth > maxDepth) return i;
    } else if (ch === 0x5d || ch === 0x7d) depth--;
  }
  return -1;
}

function tooLarge(limit: number) {
  return new DomainError("request_body_too_large", {
    message: `The body is larger than this endpoint accepts (${limit} bytes).`,
    details: { limit_bytes: limit },
  });
}

function notJson(e: unknown, text: string) {
  const message = e instanceof Error ? e.message : String(e);
  const m = /position (\d+)/.exec(message);
  const position = m ? Number(m[1]) : /end of JSON input|Unterminated/i.test(message) ? text.length : null;
  return new DomainError("request_body_not_json", {
    message: `The body is not valid JSON: ${message}`,
    details: { parse_error_position: position },
  });
}
