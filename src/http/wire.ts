import type { MiddlewareHandler } from "hono";
import { DomainError } from "../lib/errors";
import { newId } from "../lib/ids";
import type { AppEnv } from "./env";

/**
 * Every response carries `X-Request-Id`; error envelopes repeat it as `error.request_id`.
 * An unexpected failure is logged here, once, when the request ends.
 */
export function requestId(): MiddlewareHandler<AppEnv> {
  return async function requestId(c, next) {
    const id = newId("req");
    c.set("requestId", id);
    await next();
    c.header("X-Request-Id", id);
    const err = c.get("unexpected");
    if (err) {
      const entry = { level: "error", request_id: id, path: c.req.path, error: String(err), stack: err.stack };
      console.error(JSON.stringify(entry));
    }
  };
}

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

export const DEFAULT_BODY_LIMIT = 64 * 1024;

/**
 * The wire checks of a JSON body, in the order a client can act on them: size (413),
 * presence (400 `request_body_empty`), media type (415), syntax (400
 * `request_body_not_json` with the parse position). The text is left in Hono's body
 * cache, so the schema validator that follows reads it without a second stream read.
 */
export function jsonBody(opts: { limit?: number } = {}): MiddlewareHandler<AppEnv> {
  const limit = opts.limit ?? DEFAULT_BODY_LIMIT;
  return async function jsonBody(c, next) {
    const declared = Number(c.req.header("content-length") ?? "NaN");
    if (Number.isFinite(declared) && declared > limit) throw tooLarge(limit);
    const text = await c.req.text();
    if (new TextEncoder().encode(text).byteLength > limit) throw tooLarge(limit);
    if (text.trim() === "") throw new DomainError("request_body_empty");
    const mediaType = (c.req.header("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
    if (!/^application\/([\w.-]+\+)?json$/.test(mediaType)) {
      throw new DomainError("request_content_type_mismatch", {
        details: { received: mediaType || null, accepted: ["application/json"] },
      });
    }
    try {
      JSON.parse(text);
    } catch (e) {
      throw notJson(e, text);
    }
    await next();
  };
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
