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
  --after-sequence <n>   first replay the events after this sequence, in sequence order (0: every
                         event kept), then go on with new ones
  --filter <conditions>  only events whose data meets every condition, as an endpoint's filters:
                         data.status=Sold,Pending (values separated by commas; conditions by ;)
  --payload <full|thin>  thin: the envelope without data, as a thin endpoint gets it (default full)

Each event is posted once, with a 10-second timeout, and never retried; the receiver's
answer is printed (an event the filters leave out is printed as filtered). A replayed event
carries X-Webhook-Replay: listen. Events are those of GET /api/v1/events (the last 30 days). ^C stops.`;

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
  /** Conditions on an event's data, as an endpoint's `filters`. */
  filters?: ListenFilter[];
  payload?: "full" | "thin";
  /** Replay the events after this sequence before going on with new ones. */
  afterSequence?: number;
  print: (line: string) => void;
}

export interface ListenFilter {
  path: string;
  in: unknown[];
}

/** `data.status=Sold,Pending;data.x=1` as filters: values read as JSON where they parse (1, true, null), else text. */
export function parseFilters(text: string): ListenFilter[] | undefined {
  const filters: ListenFilter[] = [];
  for (const part of text.split(";").filter((p) => p.trim())) {
    const eq = part.indexOf("=");
    const path = part.slice(0, eq).trim();
    if (eq < 0 || !/^data(\.[^.]+)+$/.test(path)) return undefined;
    filters.push({
      path,
      in: part
        .slice(eq + 1)
        .split(",")
        .map((v) => {
          try {
            return JSON.parse(v);
          } catch {
            return v;
          }
        }),
    });
  }
  return filters.length ? filters : undefined;
}

/** Whether an event's data meets every filter, as the service reads them: a missing field is null. */
export function meets(filters: ListenFilter[] | undefined, data: unknown): boolean {
  return (filters ?? []).every((f) => {
    let at = data;
    for (const field of f.path.split(".").slice(1)) {
      const own = at !== null && typeof at === "object" && !Array.isArray(at) && Object.hasOwn(at, field);
      at = own ? (at as Record<string, unknown>)[field] : null;
    }
    return f.in.includes(at ?? null);
  });
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
async function forward(opts: ListenOptions, event: ListedEvent, signal: AbortSignal, replay = false): Promise<string> {
  const timestamp = Math.floor(Date.now() / 1000);
  const body = JSON.stringify({
    event_id: event.event_id,
    event_type: event.event_type,
    api_version: event.api_version,
    timestamp,
    nonce: randomBytes(16).toString("base64url"),
    // The agency's sequence and the resource, as a real delivery of the event carries them.
    ...(event.sequence !== undefined && { sequence: event.sequence, resource: event.resource ?? null }),
    ...(opts.payload !== "thin" && { data: event.data }),
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
        ...(replay ? { "X-Webhook-Replay": "listen" } : {}),
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

/** Forwards one event the types select (or prints it filtered), and prints the receiver's answer. */
async function pass(opts: ListenOptions, event: ListedEvent, signal: AbortSignal, replay = false) {
  const status = meets(opts.filters, event.data) ? await forward(opts, event, signal, replay) : "filtered";
  opts.print(
    `${new Date().toISOString()} ${event.event_type} ${event.event_id} → ${status}${replay ? " (replay)" : ""}`,
  );
}

/**
 * The replay of `--after-sequence`: the sync feed from that sequence up to its latest, page by
 * page, in sequence order. Answers false when the key stops working or the range is gone.
 */
async function replay(opts: ListenOptions, after: number, signal: AbortSignal, remember: (id: string) => void) {
  let cursor = "";
  do {
    const page: Answer = await opts.call(
      "GET",
      `/api/v1/events?limit=${PAGE_SIZE}&after_sequence=${after}` +
        (cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""),
      undefined,
      signal,
    );
    if (page.status !== 200) {
      opts.print(`! The replay stopped: ${describeAnswer(page)}`);
      return false;
    }
    for (const event of page.json.data as ListedEvent[]) {
      remember(event.event_id);
      if (!opts.types || opts.types.has(event.event_type)) await pass(opts, event, signal, true);
    }
    cursor = page.json.next_cursor as string;
  } while (cursor && !signal.aborted);
  return true;
}

/** Polls and forwards until `signal` aborts; answers the exit status (1 when the key stops working). */
export async function listen(opts: ListenOptions, signal: AbortSignal): Promise<number> {
  const seen = new Set<string>();
  const remember = (id: string) => {
    seen.add(id);
    if (seen.size > SEEN_LIMIT) seen.delete(seen.values().next().value!);
  };
  if (opts.afterSequence !== undefined && !(await replay(opts, opts.afterSequence, signal, remember))) return 1;
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
          await pass(opts, event, signal);
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
