import type { Context } from "hono";
import type { CachedResponse } from "../../durable/idempotency-ledger";
import { decrypt, encrypt, rowBinding } from "../../lib/crypto/crypto";
import { keyringOf } from "../../lib/crypto/keyring";
import type { AppEnv, IdempotencyContext } from "../env";

const REPLAYED_HEADERS = new Set(["content-type", "location", "retry-after", "etag"]);
/** Where a replay names the request that made the answer; its own `X-Request-Id` is its own. */
const ORIGINAL_REQUEST_ID = "X-Original-Request-Id";
const RESPONSE_PURPOSE = "idempotency-response";

/**
 * Cached bodies (which may carry a secret shown once, such as a webhook signing secret)
 * are kept sealed, bound to the agency, the idempotency key and the request, caller included.
 */
const responseBinding = (idem: IdempotencyContext) =>
  rowBinding("idempotency", idem.agencyId, idem.idempotencyKey, idem.requestHash);

/**
 * Each agency's answers are sealed under a key of its own (HKDF of the master key, the purpose
 * and the agency id), so the random nonces of one AES key are those of one agency's writes,
 * not of the whole service's (docs/decisions.md).
 */
const sealingScope = (idem: IdempotencyContext) => `agency:${idem.agencyId}`;

/** The body, and the `Location` that names the created resource as the body does, sealed or opened. */
async function withBody(
  env: Env,
  idem: IdempotencyContext,
  response: CachedResponse,
  change: typeof encrypt | typeof decrypt,
): Promise<CachedResponse> {
  const sealed = (value: string) =>
    change(keyringOf(env), RESPONSE_PURPOSE, value, responseBinding(idem), sealingScope(idem));
  const headers = await Promise.all(
    response.headers.map(
      async ([name, value]): Promise<[string, string]> => [
        name,
        name.toLowerCase() === "location" ? await sealed(value) : value,
      ],
    ),
  );
  return { ...response, headers, body: await sealed(response.body) };
}

export const seal = (env: Env, idem: IdempotencyContext, response: CachedResponse) =>
  withBody(env, idem, response, encrypt);
export const unseal = (env: Env, idem: IdempotencyContext, response: CachedResponse) =>
  withBody(env, idem, response, decrypt);

/**
 * The handler's answer as the ledger keeps it: the headers a replay repeats, and the
 * request id of the request that made it. The request-specific headers (its own request
 * id, its rate limit) are answered afresh on every replay.
 */
export async function recordOf(c: Context<AppEnv>): Promise<CachedResponse> {
  const res = c.res.clone();
  const headers: [string, string][] = [...res.headers].filter(([name]) => REPLAYED_HEADERS.has(name.toLowerCase()));
  headers.push(["x-request-id", c.var.requestId]);
  return { status: res.status, headers, body: await res.text() };
}

/**
 * The cached answer, as this request's own: `X-Request-Id` (set when the request ends) and
 * an error envelope's `request_id` both name this request, and `X-Original-Request-Id`
 * names the one that made the answer.
 */
export function replay(c: Context<AppEnv>, response: CachedResponse): Response {
  const headers = new Headers(response.headers);
  const original = headers.get("x-request-id");
  headers.delete("x-request-id");
  if (original) headers.set(ORIGINAL_REQUEST_ID, original);
  headers.set("X-Idempotent-Replay", "true");
  const body = response.status === 204 ? null : withRequestId(response.body, c.var.requestId);
  return new Response(body, { status: response.status, headers });
}

function withRequestId(body: string, requestId: string): string {
  if (!body.startsWith('{"error":')) return body;
  try {
    const envelope = JSON.parse(body) as { error?: { request_id?: unknown } };
    if (typeof envelope.error?.request_id !== "string") return body;
    envelope.error.request_id = requestId;
    return JSON.stringify(envelope);
  } catch {
    return body;
  }
}
