// `ops listen`: forwards a sandbox agency's events to a local receiver, as `stripe listen`
// does. It polls the events API with the agency's key and POSTs each new event to
// --forward-to, signed exactly like a webhook delivery (src/webhooks/signing.ts): the same
// envelope and headers, X-Webhook-Signature: sha256=<hex HMAC-SHA256 of the raw body, keyed
// with the whole secret>, and the Standard Webhooks `webhook-id`, `webhook-timestamp` and
// `webhook-signature` whenever the secret is of the `whsec_<padded base64>` form.
import { createHmac, randomBytes } from "node:crypto";
import { type Answer, type Call, describeAnswer } from "./ops-api.ts";

export const LISTEN_USAGE = `Usage: npm run ops -- listen --forward-to <url> [--key sk_test_…] [options]

Forwards your sandbox agency's events to a local receiver, signed like webhook deliveries,
and prints each one: <time> <event_type> <event_id> → <receiver's status>.

Options:
  --forward-to <url>     where to POST each event (http or https; localhost is fine)
  --key <sk_test_…>      the agency's sandbox key (default: ALMS_API_KEY)
  --secret <whsec_…>     signing secret to sign with (default: ALMS_WEBHOOK_SECRET, else a new
                         one, printed at start); verify deliveries with it
  --events <a,b,…>       only these event types (default: every type)
  --since <ISO instant>  also forward events created since then (default: from now on)
  --interval <seconds>   pause between polls, 0.5 to 60 (default 2)
  --max-per-poll <n>     events forwarded per poll, 1 to 500 (default 100); the rest follow

Each event is posted once, with a 10-second timeout, and never retried; the receiver's
answer is printed. Events are those of GET /api/v1/events (the last 30 days). ^C stops.`;

/** Poll again this far back: events whose creation commits late are still seen, and never twice. */
const LOOKBACK_MS = 10_000;
const FORWARD_TIMEOUT_MS = 10_000;
const PAGE_SIZE = 100;
const MAX_PAGES_PER_POLL = 10;
const SEEN_LIMIT = 10_000;

export interface ListenOptions {
  call: Call;
  forwardTo: string;
  secret: string;
  types?: ReadonlySet<string>;
  since: Date;
  intervalMs: number;
  maxPerPoll: number;
  print: (line: string) => void;
}

/** A secret of the form endpoints are given: `whsec_` + padded standard base64 of 32 random bytes. */
export const newSecret = () => `whsec_${randomBytes(32).toString("base64")}`;

const PADDED_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * The signature headers of a delivery, as the Worker signs them: `X-Webhook-Signature` always,
 * and the whole Standard Webhooks set when the secret's tail decodes to its key; never half of it.
 */
export function signatureHeaders(secret: string, webhookId: string, timestamp: number, body: string) {
  const headers: Record<string, string> = {
    "X-Webhook-Signature": `sha256=${createHmac("sha256", secret).update(body, "utf8").digest("hex")}`,
  };
  const encoded = secret.startsWith("whsec_") ? secret.slice("whsec_".length) : "";
  if (encoded && PADDED_BASE64.test(encoded)) {
    const mac = createHmac("sha256", Buffer.from(encoded, "base64"))
      .update(`${webhookId}.${timestamp}.${body}`, "utf8")
      .digest("base64");
    headers["webhook-id"] = webhookId;
    headers["webhook-timestamp"] = String(timestamp);
    headers["webhook-signature"] = `v1,${mac}`;
  }
  return headers;
}

interface ListedEvent {
  event_id: string;
  event_type: string;
  api_version: string;
  created_at: string;
  sequence?: number;
  resource?: unknown;
  data: unknown;
}

/** One signed POST, built as a webhook delivery attempt is: a new timestamp and nonce, the event's id. */
async function forward(opts: ListenOptions, event: ListedEvent, signal: AbortSignal): Promise<string> {
  const timestamp = Math.floor(Date.now() / 1000);
  const body = JSON.stringify({
    event_id: event.event_id,
    event_type: event.event_type,
    api_version: event.api_version,
    timestamp,
    nonce: randomBytes(16).toString("base64url"),
    // The agency's sequence and the resource, as a real delivery of the event carries them.
    ...(event.sequence !== undefined && { sequence: event.sequence, resource: event.resource ?? null }),
    data: event.data,
  });
  try {
    const res = await fetch(opts.forwardTo, {
      method: "POST",
      redirect: "manual",
      signal: AbortSignal.any([signal, AbortSignal.timeout(FORWARD_TIMEOUT_MS)]),
      headers: {
        "Content-Type": "application/json",
        "User-Agent": "ALMS-Webhooks/1.0 (ops listen)",
        ...signatureHeaders(opts.secret, event.event_id, timestamp, body),
        "X-Webhook-Event": event.event_type,
        "X-Webhook-Id": event.event_id,
        "X-Webhook-Delivery": `whd_listen_${randomBytes(9).toString("hex")}`,
        // A delivery continues the writer's trace; the events API does not show it, so each forward starts one.
        traceparent: `00-${randomBytes(16).toString("hex")}-${randomBytes(8).toString("hex")}-00`,
      },
      body,
    });
    await res.body?.cancel();
    return String(res.status);
  } catch (err) {
    if (signal.aborted) throw err;
    const e = err as Error;
    return e.name === "TimeoutError" ? `no answer within ${FORWARD_TIMEOUT_MS / 1000} s` : `failed: ${e.message}`;
  }
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });

/** Polls and forwards until `signal` aborts; answers the exit status (1 when the key stops working). */
export async function listen(opts: ListenOptions, signal: AbortSignal): Promise<number> {
  const seen = new Set<string>();
  const remember = (id: string) => {
    seen.add(id);
    if (seen.size > SEEN_LIMIT) seen.delete(seen.values().next().value!);
  };
  const floor = opts.since.getTime();
  let newest = floor;
  while (!signal.aborted) {
    let wait = opts.intervalMs;
    try {
      const after = new Date(Math.max(floor, newest - LOOKBACK_MS)).toISOString();
      let cursor = "";
      let forwarded = 0;
      let pages = 0;
      do {
        const page: Answer = await opts.call(
          "GET",
          `/api/v1/events?limit=${PAGE_SIZE}&created_after=${encodeURIComponent(after)}` +
            (cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""),
          undefined,
          signal,
        );
        if (page.status === 401 || page.status === 403) {
          opts.print(`! The events API refused the key: ${describeAnswer(page)}`);
          return 1;
        }
        if (page.status !== 200) {
          opts.print(`! Polling failed: ${describeAnswer(page)}`);
          wait = Math.max(wait, Number(page.headers.get("Retry-After") ?? 0) * 1000);
          break;
        }
        for (const event of page.json.data as ListedEvent[]) {
          if (seen.has(event.event_id)) continue;
          remember(event.event_id);
          const createdAt = Date.parse(event.created_at);
          newest = Math.max(newest, createdAt);
          if (createdAt < floor || (opts.types && !opts.types.has(event.event_type))) continue;
          const status = await forward(opts, event, signal);
          opts.print(`${new Date().toISOString()} ${event.event_type} ${event.event_id} → ${status}`);
          if (++forwarded >= opts.maxPerPoll) break;
        }
        cursor = forwarded < opts.maxPerPoll ? (page.json.next_cursor as string) : "";
      } while (cursor && ++pages < MAX_PAGES_PER_POLL && !signal.aborted);
    } catch (err) {
      if (signal.aborted) break;
      opts.print(`! Polling failed: ${(err as Error).message}`);
    }
    await sleep(wait, signal);
  }
  return 0;
}
