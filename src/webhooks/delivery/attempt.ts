import type { WebhookEndpoint } from "../../db/schema";
import { type SyncFields, syncFields } from "../../domain/events/sync";
import { unseal, webhookSigningSecret } from "../../domain/sealed-columns";
import { keyringOf } from "../../lib/crypto/keyring";
import { randomToken } from "../../lib/ids";
import { checkOutboundUrl } from "../../lib/outbound-url";
import { childOf, formatTraceparent, newTrace, outboundTraceparent, parseTraceparent } from "../../lib/telemetry/trace";
import { type Signer, signer } from "../signing";
import type { StoredEvent, Target } from "./claim";
import { DELIVERY_TIMEOUT_MS } from "./limits";
import type { AttemptOutcome } from "./outcome-writer";

/**
 * One attempt of one leased delivery; its outcome is recorded by the caller. The envelope
 * is built afresh: `event_id` stays, while `timestamp` is this attempt's and `nonce` is
 * new, so receivers' 5-minute and 10-minute rules hold on retries. The receiver URL is
 * checked again on every attempt. Attempts are numbered per delivery across replays, so
 * the log never repeats a number. Throws on a failure of our own (a sealed secret that
 * does not open): nothing is sent.
 */
export async function attemptDelivery(
  env: Env,
  target: Target,
  event: StoredEvent | undefined,
  number: number,
  timeoutMs: number,
  signerOf: (endpoint: NonNullable<Target["endpoint"]>) => Promise<Signer>,
  traceparent?: string,
): Promise<AttemptOutcome> {
  const { delivery, endpoint } = target;
  const started = Date.now();
  const outcome = { deliveryId: delivery.id, endpointId: delivery.endpointId, attempt: number, started };
  const dead = (error: string): AttemptOutcome => ({ ...outcome, latencyMs: 0, status: null, error, final: "dead" });
  if (!endpoint?.isActive) return dead("endpoint removed");
  const verdict = checkOutboundUrl(endpoint.url, { allowLocalHttp: env.ALLOW_HTTP_RECEIVERS === "true" });
  if (!verdict.ok) return dead(`receiver refused: url ${verdict.reason}`);
  if (!event) return dead("event missing");
  const sign = await signerOf(endpoint);
  const { status, error, timedOut } = await postEnvelope(
    verdict.url,
    sign,
    {
      id: event.id,
      type: event.eventType,
      apiVersion: event.apiVersion,
      // A thin endpoint gets the envelope and the resource's ids, never the data.
      ...(endpoint.payload === "thin" ? {} : { data: event.data }),
      ...syncFields(event),
      replayId: delivery.replayId,
    },
    delivery.id,
    started,
    timeoutMs,
    deliveryTraceparent(traceparent, event.traceParent),
  );
  const delivered = error === null;
  return {
    ...outcome,
    latencyMs: Date.now() - started,
    status,
    error,
    final: delivered ? "delivered" : undefined,
    health: delivered ? "healthy" : { failed: true, timedOut },
  };
}

/**
 * The `traceparent` an attempt sends: a child span of the message's trace, or of the
 * event's (a replay, a message sent before traces were carried), so a receiver can join
 * the delivery to the write that caused it; a new trace for an event without one.
 */
function deliveryTraceparent(message: string | undefined, event: string | null): string {
  const parent = parseTraceparent(message) ?? parseTraceparent(event);
  return formatTraceparent(parent ? childOf(parent) : newTrace());
}

/**
 * The endpoint's signing secret. It opens only for the endpoint it was sealed for: a
 * ciphertext copied from another row throws, so nothing is ever signed with another
 * endpoint's secret (the caller logs it and retries; nothing is sent).
 */
export async function signingSecret(
  env: Env,
  endpoint: Pick<WebhookEndpoint, "id" | "agencyId" | "secretSealed">,
): Promise<string> {
  try {
    return await unseal(
      keyringOf(env),
      webhookSigningSecret,
      { agencyId: endpoint.agencyId, boundId: endpoint.id },
      endpoint.secretSealed,
    );
  } catch {
    throw new Error(`the signing secret of webhook endpoint ${endpoint.id} does not open for this endpoint`);
  }
}

/**
 * One signed POST of an envelope built for this attempt: `X-Webhook-Signature` over the raw
 * body, and the Standard Webhooks headers with `webhook-id` the event id (the same on every
 * attempt) and `webhook-timestamp` the envelope's `timestamp` (this attempt's), and the
 * W3C `traceparent` of the attempt. A delivery of a replay says so: `replay_id` in the
 * (signed) envelope and `X-Webhook-Replay`.
 */
export async function postEnvelope(
  url: string,
  sign: Signer,
  event: {
    id: string;
    type: string;
    apiVersion: string;
    data?: unknown;
    replayId?: string | null;
  } & Partial<SyncFields>,
  deliveryId: string,
  started: number,
  timeoutMs = DELIVERY_TIMEOUT_MS,
  traceparent: string | undefined = outboundTraceparent(),
) {
  const timestamp = Math.floor(started / 1000);
  const body = JSON.stringify({
    event_id: event.id,
    event_type: event.type,
    api_version: event.apiVersion,
    timestamp,
    nonce: randomToken(16),
    ...(event.sequence !== undefined && { sequence: event.sequence, resource: event.resource ?? null }),
    ...("data" in event && { data: event.data }),
    ...(event.replayId && { replay_id: event.replayId }),
  });
  let status: number | null = null;
  let error: string | null = null;
  let timedOut = false;
  try {
    const res = await fetch(url, {
      method: "POST",
      redirect: "manual",
      signal: AbortSignal.timeout(timeoutMs),
      headers: {
        "Content-Type": "application/json",
        "User-Agent": "ALMS-Webhooks/1.0",
        ...(await sign({ webhookId: event.id, timestamp, rawBody: body })),
        "X-Webhook-Event": event.type,
        "X-Webhook-Id": event.id,
        "X-Webhook-Delivery": deliveryId,
        ...(event.replayId ? { "X-Webhook-Replay": event.replayId } : {}),
        ...(traceparent ? { traceparent } : {}),
      },
      body,
    });
    status = res.status;
    await res.body?.cancel();
    if (status < 200 || status >= 300) error = `receiver answered ${status}`;
  } catch (e) {
    timedOut = e instanceof Error && e.name === "TimeoutError";
    error = timedOut
      ? `no answer within ${timeoutMs / 1000} s`
      : `request failed: ${e instanceof Error ? e.message : String(e)}`;
  }
  return { status, error, timedOut };
}

/** The signer of each endpoint of a batch: its secret is opened, and its signing keys imported, once per batch. */
export function batchSigners(env: Env) {
  const signers = new Map<string, Promise<Signer>>();
  return (endpoint: NonNullable<Target["endpoint"]>) => {
    let found = signers.get(endpoint.id);
    if (!found) {
      found = signingSecret(env, endpoint).then(signer);
      signers.set(endpoint.id, found);
    }
    return found;
  };
}
