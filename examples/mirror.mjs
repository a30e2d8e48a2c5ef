// A copy of your agency's listings, users, orders and tours that stays equal to the service,
// fed by webhook deliveries and, where they fall short, by the events feed and the list routes.
// Plain JavaScript with no dependencies: it runs on Node 20+ and in a Worker.
//
// How it stays equal (docs/sync.md explains each step):
//   - every event carries `sequence` (your agency's 1, 2, 3… with no gap) and `resource`
//     (`{ type, id, version }`: what it changed and the version the change produced);
//   - a resource is read again only when the event's version is newer than the copy's, with
//     `If-None-Match` of the copy's ETag (a 304 costs no rate budget), and dropped on a 404;
//   - `through` is the watermark: every event up to it is accounted for. A delivery whose
//     sequence jumps past through + 1 means something was missed: `fill()` reads
//     GET /api/v1/events?after_sequence=<through> to the end and moves `through` to its
//     `last_sequence`;
//   - a 410 `event_sequence_expired` (what was missed is past the 30-day window) makes it
//     `resync()` from the list routes, then continue after the `last_sequence` the error named;
//   - tours have no event: `sweepTours()` lists them and re-reads the changed ones.
//
// As a receiver (verifies the signature, the 5-minute timestamp and the nonce, then feeds receive()):
//   ALMS_URL=http://127.0.0.1:8787 ALMS_API_KEY=sk_test_… WEBHOOK_SECRET=whsec_… PORT=9999 \
//     node examples/mirror.mjs

/** Items asked for per page of a cursor list (the maximum). */
const PAGE_LIMIT = 200;
/** Tours asked for per page (the tour list's maximum). */
const TOUR_PAGE_LIMIT = 100;
/** Pages read at most by one walk of one list, so no answer can keep a loop going for ever. */
const MAX_PAGES = 500;
/** Tries of one request answered 429 or 503, waiting `Retry-After` between them. */
const MAX_TRIES = 3;

const etagOf = (version) => `"v${version}"`;

/** Raised for an answer the mirror cannot use; `status` and `code` say which. */
export class MirrorError extends Error {
  constructor(status, code, message) {
    super(`${status} ${code}: ${message}`);
    this.status = status;
    this.code = code;
  }
}

/**
 * A mirror of one agency, read with one API key. `fetch` defaults to the global one; pass
 * another to route its requests (a service binding, a test). `fillGaps: false` only applies
 * what arrives, which is how a copy loses changes (useful to see the difference).
 */
export function createMirror({
  baseUrl,
  apiKey,
  fetch: fetchImpl = globalThis.fetch,
  fillGaps = true,
  timeoutMs = 10_000,
  onEvent = () => {},
}) {
  const origin = baseUrl.replace(/\/api\/v1\/?$/, "").replace(/\/$/, "");
  const listings = new Map(); // listing_number → listing
  const users = new Map(); // user id → user
  const orders = new Map(); // listing_number → Map(order id → order)
  const tours = new Map(); // tour_number → tour
  const ahead = new Set(); // sequences accounted for above through + 1
  const stats = { applied: 0, skipped: 0, reads: 0, notModified: 0, fills: 0, resyncs: 0, sweeps: 0 };
  let through = 0;

  // One thing at a time: a delivery, a fill, a resync and a sweep never interleave.
  let chain = Promise.resolve();
  const serial = (fn) => {
    const run = chain.then(fn);
    chain = run.catch(() => {});
    return run;
  };

  async function request(path, { etag } = {}) {
    for (let attempt = 1; ; attempt++) {
      const res = await fetchImpl(`${origin}${path}`, {
        headers: { "X-API-Key": apiKey, Accept: "application/json", ...(etag ? { "If-None-Match": etag } : {}) },
        redirect: "manual",
        signal: AbortSignal.timeout(timeoutMs),
      });
      stats.reads++;
      if (res.status === 304) {
        stats.notModified++;
        return { status: 304, body: null };
      }
      const body = await res.json().catch(() => null);
      if ((res.status === 429 || res.status === 503) && attempt < MAX_TRIES) {
        const wait = Math.min(60, Number(res.headers.get("Retry-After")) || 1);
        await new Promise((resolve) => setTimeout(resolve, wait * 1000 + Math.random() * 1000));
        continue;
      }
      if (res.ok || res.status === 404 || res.status === 410) return { status: res.status, body };
      throw new MirrorError(res.status, body?.error?.code ?? "unexpected", body?.error?.message ?? res.statusText);
    }
  }

  /** Every item of a cursor list, page after page (at most MAX_PAGES); null when the list is 404. */
  async function readAll(path) {
    const items = [];
    let cursor = "";
    for (let page = 0; page < MAX_PAGES; page++) {
      const sep = path.includes("?") ? "&" : "?";
      const { status, body } = await request(
        `${path}${sep}limit=${PAGE_LIMIT}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
      );
      if (status === 404) return null;
      items.push(...body.data);
      if (!body.next_cursor) return items;
      cursor = body.next_cursor;
    }
    throw new MirrorError(0, "too_many_pages", `${path} has more than ${MAX_PAGES} pages`);
  }

  /** Reads one resource again, conditionally on the copy's version: 200 replaces, 304 keeps, 404 drops. */
  async function refresh(map, path, id) {
    const held = map.get(id);
    const { status, body } = await request(`${path}/${encodeURIComponent(id)}`, {
      etag: held ? etagOf(held.version) : undefined,
    });
    if (status === 404) map.delete(id);
    else if (status === 200) map.set(id, body);
  }

  async function refreshOrders(listingNumber) {
    const items = await readAll(`/api/v1/listings/${encodeURIComponent(listingNumber)}/orders`);
    if (items === null) orders.delete(listingNumber);
    else orders.set(listingNumber, new Map(items.map((o) => [o.id, o])));
  }

  /** Brings the resource an event names up to at least the version the event gives it. */
  async function apply(event) {
    const resource = event.resource;
    if (!resource) return; // an event about nothing the copy holds (appointments, deliveries, billing)
    if (resource.type === "listing" || resource.type === "user") {
      const [map, path] = resource.type === "listing" ? [listings, "/api/v1/listings"] : [users, "/api/v1/users"];
      if ((map.get(resource.id)?.version ?? 0) >= resource.version) {
        stats.skipped++;
        return;
      }
      await refresh(map, path, resource.id);
    } else if (resource.type === "order") {
      const listingNumber = event.data?.listing_number;
      if (!listingNumber) return;
      if ((orders.get(listingNumber)?.get(resource.id)?.version ?? 0) >= resource.version) {
        stats.skipped++;
        return;
      }
      await refreshOrders(listingNumber);
    } else return;
    stats.applied++;
  }

  /** Marks a sequence accounted for and moves the watermark over every sequence now contiguous. */
  function account(sequence) {
    if (sequence <= through) return;
    ahead.add(sequence);
    advanceTo(through);
  }

  function advanceTo(sequence) {
    through = Math.max(through, sequence);
    for (const s of ahead) if (s <= through) ahead.delete(s);
    while (ahead.delete(through + 1)) through++;
  }

  const seen = (sequence) => sequence <= through || ahead.has(sequence);

  async function receiveOne(event) {
    if (typeof event?.sequence !== "number") return "ignored"; // a test delivery: no event of the agency
    if (seen(event.sequence)) return "duplicate";
    if (fillGaps && event.sequence > through + 1) {
      await fillNow();
      if (seen(event.sequence)) return "filled";
    }
    await apply(event);
    account(event.sequence);
    onEvent(event, "webhook");
    return "applied";
  }

  /** Reads the feed after `through` to its end, applying what the copy has not seen; on a 410, resyncs. */
  async function fillNow(allowResync = true) {
    stats.fills++;
    const after = through;
    let noted = null;
    let cursor = "";
    for (let page = 0; page < MAX_PAGES; page++) {
      const { status, body } = await request(
        `/api/v1/events?after_sequence=${after}&limit=${PAGE_LIMIT}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
      );
      if (status === 410 && body?.error?.code === "event_sequence_expired" && allowResync) {
        await resyncNow(body.error.details.last_sequence);
        return fillNow(false);
      }
      if (status !== 200) throw new MirrorError(status, body?.error?.code ?? "unexpected", "the events feed refused");
      // A walk followed to its end has listed every event up to its last page's last_sequence that the key may read.
      noted = body.last_sequence;
      for (const event of body.data) {
        if (seen(event.sequence)) continue;
        await apply(event);
        account(event.sequence);
        onEvent(event, "feed");
      }
      if (!body.next_cursor) {
        // Sequences up to last_sequence that the walk did not list are events this key may not read.
        advanceTo(noted);
        return;
      }
      cursor = body.next_cursor;
    }
    throw new MirrorError(0, "too_many_pages", `the feed after ${after} has more than ${MAX_PAGES} pages`);
  }

  /**
   * Reads every resource again from the list routes; `lastSequence` is the sequence noted
   * before the reads began (the 410's `details.last_sequence`), after which the feed goes on.
   */
  async function resyncNow(lastSequence) {
    stats.resyncs++;
    const listed = (await readAll("/api/v1/listings")) ?? [];
    listings.clear();
    for (const l of listed) listings.set(l.listing_number, l);
    orders.clear();
    for (const l of listed) await refreshOrders(l.listing_number);
    const people = (await readAll("/api/v1/users")) ?? [];
    users.clear();
    for (const u of people) users.set(u.id, u);
    await sweepToursNow();
    ahead.clear();
    through = Math.max(through, lastSequence);
  }

  /** Lists the tours, re-reads each one whose version differs, and drops the copies of deleted ones. */
  async function sweepToursNow() {
    stats.sweeps++;
    const listed = new Set();
    for (let page = 1; page <= MAX_PAGES; page++) {
      const { body } = await request(`/api/v1/tours?page=${page}&limit=${TOUR_PAGE_LIMIT}`);
      for (const summary of body.tours) {
        listed.add(summary.tour_number);
        if (tours.get(summary.tour_number)?.version !== summary.version || summary.version === undefined)
          await refresh(tours, "/api/v1/tours", summary.tour_number);
      }
      if (page >= body.pages) break;
    }
    // A tour missing from the walk may only have moved between pages while it ran: ask before dropping it.
    for (const tourNumber of [...tours.keys()])
      if (!listed.has(tourNumber)) await refresh(tours, "/api/v1/tours", tourNumber);
  }

  /** A first copy: notes the feed's head, reads every resource, then follows the feed after the head. */
  async function startNow() {
    const { status, body } = await request("/api/v1/events?after_sequence=0&limit=1");
    const head = status === 410 ? body.error.details.last_sequence : body.last_sequence;
    await resyncNow(head);
    await fillNow();
  }

  return {
    /** Builds the first copy from the list routes and the feed. */
    start: () => serial(() => startNow()),
    /** Applies one delivery's envelope (parsed JSON), filling the gap first if its sequence jumps. */
    receive: (envelope) => serial(() => receiveOne(envelope)),
    /** Reads the feed after the watermark to its end. */
    fill: () => serial(() => fillNow()),
    /** Reads every resource again; then the feed continues after `lastSequence`. */
    resync: (lastSequence) => serial(() => resyncNow(lastSequence)),
    /** Brings the tours up to date (they have no event). */
    sweepTours: () => serial(() => sweepToursNow()),
    /** Every event up to this sequence is accounted for. */
    get through() {
      return through;
    },
    /** Sequences accounted for above through + 1: a gap not filled (yet). */
    get ahead() {
      return [...ahead].sort((a, b) => a - b);
    },
    listings,
    users,
    orders,
    tours,
    stats,
  };
}

const HEX = (bytes) => [...new Uint8Array(bytes)].map((b) => b.toString(16).padStart(2, "0")).join("");

/**
 * Whether a delivery is genuine and fresh: `X-Webhook-Signature` is sha256=<hex HMAC-SHA256 of
 * the raw body, keyed with the whole signing secret>, compared in constant time, and the
 * envelope's `timestamp` is within 5 minutes of this clock. (examples/webhook-receiver.mjs
 * also shows the Standard Webhooks signature.) Returns the parsed envelope, or null.
 */
export async function verifyDelivery(rawBody, signatureHeader, secret, now = Date.now()) {
  const key = await crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const expected = new TextEncoder().encode(
    `sha256=${HEX(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(rawBody)))}`,
  );
  const given = new TextEncoder().encode(signatureHeader ?? "");
  let diff = expected.length ^ given.length;
  for (let i = 0; i < expected.length; i++) diff |= expected[i] ^ (given[i] ?? 0);
  if (diff !== 0) return null;
  const envelope = JSON.parse(rawBody);
  return Math.abs(now / 1000 - envelope.timestamp) <= 5 * 60 ? envelope : null;
}

/** The receiver mode: `node examples/mirror.mjs`, with the settings in the environment. */
async function main() {
  // ALMS_URL, as the ops CLI reads it (ALMS_BASE_URL, its earlier name, still works).
  const { ALMS_API_KEY, WEBHOOK_SECRET, PORT = "9999" } = process.env;
  const ALMS_URL = process.env.ALMS_URL ?? process.env.ALMS_BASE_URL;
  if (!ALMS_URL || !ALMS_API_KEY || !WEBHOOK_SECRET) {
    console.error("Set ALMS_URL, ALMS_API_KEY and WEBHOOK_SECRET (the endpoint's signing secret).");
    process.exit(2);
  }
  const { createServer } = await import("node:http");
  const mirror = createMirror({ baseUrl: ALMS_URL, apiKey: ALMS_API_KEY });
  const NONCE_MEMORY_MS = 10 * 60 * 1000;
  const nonces = new Map(); // nonce → when first seen
  await mirror.start();
  console.log(`copied ${mirror.listings.size} listings, ${mirror.users.size} users, ${mirror.tours.size} tours`);
  setInterval(() => mirror.sweepTours().catch((e) => console.error(`tour sweep failed: ${e.message}`)), 5 * 60_000);

  createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", async () => {
      const raw = Buffer.concat(chunks).toString("utf8");
      const envelope = await verifyDelivery(raw, req.headers["x-webhook-signature"], WEBHOOK_SECRET).catch(() => null);
      if (!envelope) return res.writeHead(401).end("bad signature or stale timestamp");
      const now = Date.now();
      for (const [n, at] of nonces) if (now - at > NONCE_MEMORY_MS) nonces.delete(n);
      if (nonces.has(envelope.nonce)) return res.writeHead(409).end("nonce seen in the last 10 minutes");
      nonces.set(envelope.nonce, now);
      try {
        const outcome = await mirror.receive(envelope);
        console.log(`${envelope.event_type} #${envelope.sequence ?? "-"} ${outcome}; through ${mirror.through}`);
        res.writeHead(200).end(outcome);
      } catch (e) {
        // Not applied: answer an error so the service delivers it again.
        console.error(`${envelope.event_type} #${envelope.sequence}: ${e.message}`);
        res.writeHead(503).end("try again");
      }
    });
  }).listen(Number(PORT), "127.0.0.1", () => console.log(`mirror listening on http://127.0.0.1:${PORT}`));
}

if (typeof process !== "undefined" && process.argv?.[1]?.endsWith("mirror.mjs")) await main();
