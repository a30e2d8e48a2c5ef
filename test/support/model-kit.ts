import fc from "fast-check";
import { expect } from "vitest";
import { mintKey } from "../../src/domain/api-keys";
import { call, db, internal, makeTenant, mockFetch, outbox, type Tenant, withoutRequestId } from "./harness";

// Receivers of the endpoints registered below are answered locally, also after the test.
mockFetch(() => new Response("ok"), { pastTheTest: true });

const SETTABLE = ["Coming Soon", "Active", "Pending", "Sold", "Off Market"] as const;
/** Client-chosen listing numbers, few enough that a sequence collides on them. */
const NUMBERS = ["aaaaaaa", "bbbbbbb", "ccccccc"];
const HOOK_CAP = 16;

interface ModelListing {
  number: string;
  status: string;
  activated: boolean;
  cancels: number;
}

interface Mutation {
  method: string;
  path: string;
  body: unknown;
  other: unknown;
  idem: string;
  keyId: string;
  status: number;
  text: string;
}

interface Model {
  listings: ModelListing[];
  hooks: number;
  mutation: Mutation | null;
}

interface Real {
  t: Tenant;
  keyId: string;
  secret: string;
  /** The previous secret of a rotated key, inside its grace window. */
  grace: string | null;
  /** Secrets that must now fail: key id, secret, and the code they must fail with. */
  dead: [string, string, string][];
}

type Cmd = fc.AsyncCommand<Model, Real>;

async function api(r: Real, path: string, opts: { method?: string; body?: unknown; idem?: string } = {}) {
  const res = await call(path, { key: r.secret, method: opts.method, body: opts.body, idempotencyKey: opts.idem });
  expect(res.status, `${opts.method ?? "GET"} ${path}: ${res.text}`).toBeLessThan(500);
  return res;
}

/** A mutation through the API, remembered so that a later command can retry it. */
async function mutate(m: Model, r: Real, method: string, path: string, body: unknown, other: unknown) {
  const idem = crypto.randomUUID();
  const res = await api(r, path, { method, body, idem });
  m.mutation = { method, path, body, other, idem, keyId: r.keyId, status: res.status, text: res.text };
  return res;
}

function expectCode(res: { status: number; json: any; text: string }, status: number, code?: string) {
  expect(res.status, res.text).toBe(status);
  if (code) expect(res.json?.error?.code, res.text).toBe(code);
}

/** After every step: the touched listing reads as modelled, the outbox holds one event per change, keys as modelled. */
async function invariants(m: Model, r: Real, touched?: ModelListing) {
  if (touched) {
    const res = await api(r, `/api/v1/listings/${touched.number}`);
    expectCode(res, 200);
    expect(res.json.status, res.text).toBe(touched.status);
    expect(res.json.is_activated, res.text).toBe(touched.activated);
  }
  const events = await outbox(r.t.agencyId);
  const count = (type: string, number?: string) =>
    events.filter((e) => e.eventType === type && (!number || e.data.listing_number === number)).length;
  expect(count("listing.created"), "listing.created per created listing").toBe(m.listings.length);
  for (const l of m.listings) {
    expect(count("listing.created", l.number), `listing.created of ${l.number}`).toBe(1);
    expect(count("listing.cancelled", l.number), `listing.cancelled of ${l.number}`).toBe(l.cancels);
  }
}

/** Secrets that must fail from now on, checked when they die and again at the end of the sequence. */
async function expectDead(r: Real) {
  for (const [, secret, code] of r.dead) {
    const res = await call("/api/v1/listings", { key: secret });
    expectCode(res, 401, code);
  }
}

const listingIndex = fc.nat({ max: 7 });
const pick = (m: Model, i: number) => m.listings[i % m.listings.length]!;

const create = (number: string | null): Cmd => ({
  check: () => true,
  async run(m, r) {
    const body = {
      address: "1 Model Street",
      owner_user_id: r.t.owner.id,
      agent_one_id: r.t.agent.id,
      ...(number ? { listing_number: number } : {}),
    };
    const res = await mutate(m, r, "POST", "/api/v1/listings", body, { ...body, address: "2 Model Street" });
    if (number && m.listings.some((l) => l.number === number)) {
      expectCode(res, 409, "listing_number_taken");
      return invariants(m, r);
    }
    expectCode(res, 201);
    expect(res.json.status).toBe("Coming Soon");
    const listing = { number: res.json.listing_number, status: "Coming Soon", activated: false, cancels: 0 };
    if (number) expect(listing.number).toBe(number);
    m.listings.push(listing);
    await invariants(m, r, listing);
  },
  toString: () => `create(${number ?? ""})`,
});

const activate = (i: number): Cmd => ({
  check: (m) => m.listings.length > 0,
  async run(m, r) {
    const l = pick(m, i);
    const res = await internal(`/internal/v1/agencies/${r.t.agencyId}/listings/${l.number}/activate`, {
      method: "POST",
    });
    expect(res.status, res.text).toBeLessThan(500);
    if (!l.activated) expectCode(res, 200);
    if (res.status === 200) l.activated = true;
    await invariants(m, r, l);
  },
  toString: () => `activate(${i})`,
});

const changeStatus = (i: number, next: string, other: string): Cmd => ({
  check: (m) => m.listings.length > 0,
  async run(m, r) {
    const l = pick(m, i);
    const path = `/api/v1/listings/${l.number}/status`;
    const res = await mutate(m, r, "PATCH", path, { new_status: next }, { new_status: other });
    if (!l.activated) expectCode(res, 409, "listing_not_activated");
    else if (l.status === next) expectCode(res, 409, "no_op_transition");
    else {
      expectCode(res, 200);
      l.status = next;
    }
    await invariants(m, r, l);
  },
  toString: () => `status(${i}, ${next})`,
});

const cancel = (i: number): Cmd => ({
  check: (m) => m.listings.length > 0,
  async run(m, r) {
    const l = pick(m, i);
    const res = await mutate(m, r, "POST", `/api/v1/listings/${l.number}/cancel`, {}, { reason: "Changed plans" });
    if (l.status === "Cancelled") expectCode(res, 409, "listing_already_cancelled");
    else {
      expectCode(res, 200);
      expect(res.json.status).toBe("Cancelled");
      l.status = "Cancelled";
      l.cancels++;
    }
    await invariants(m, r, l);
  },
  toString: () => `cancel(${i})`,
});

const retry = (sameBody: boolean): Cmd => ({
  check: (m) => m.mutation !== null,
  async run(m, r) {
    const last = m.mutation!;
    const res = await api(r, last.path, {
      method: last.method,
      body: sameBody ? last.body : last.other,
      idem: last.idem,
    });
    // Any key of the agency gets the replay, except of an answer carrying a signing secret.
    const callerOnly = last.method === "POST" && last.path === "/api/v1/webhooks/endpoints";
    if (callerOnly && last.keyId !== r.keyId) expectCode(res, 409, "idempotency_key_conflict");
    else if (!sameBody) expectCode(res, 409, "idempotency_key_conflict");
    else {
      expect(res.status, res.text).toBe(last.status);
      expect(res.headers.get("X-Idempotent-Replay")).toBe("true");
      if (res.status < 400) expect(res.text).toBe(last.text);
      else {
        // A replayed envelope names the replaying request; everything else is the first answer.
        expect(res.json.error.request_id, res.text).toBe(res.headers.get("X-Request-Id"));
        expect(withoutRequestId(res.json)).toEqual(withoutRequestId(JSON.parse(last.text)));
      }
    }
    await invariants(m, r);
  },
  toString: () => `retry(${sameBody ? "same body" : "other body"})`,
});

const registerHooks = (n: number): Cmd => ({
  check: () => true,
  async run(m, r) {
    for (let k = 0; k < n; k++) {
      const body = { url: `https://hooks.example.com/${m.hooks}-${k}`, event_types: ["listing.created"] };
      const res = await mutate(m, r, "POST", "/api/v1/webhooks/endpoints", body, { url: "https://other.example.com/" });
      if (m.hooks >= HOOK_CAP) expectCode(res, 409, "webhook_endpoint_limit_reached");
      else {
        expectCode(res, 201);
        expect(res.json.signing_secret).toMatch(/^whsec_/);
        m.hooks++;
      }
    }
    await invariants(m, r);
  },
  toString: () => `registerHooks(${n})`,
});

const rotate: Cmd = {
  check: () => true,
  async run(m, r) {
    const res = await internal(`/internal/v1/api-keys/${r.keyId}/rotate`, { method: "POST" });
    expectCode(res, 200);
    if (r.grace) r.dead.push([r.keyId, r.grace, "api_key_invalid"]);
    r.grace = r.secret;
    r.secret = res.json.secret;
    const old = await call("/api/v1/listings", { key: r.grace });
    expect(old.status, `rotated secret inside its grace window: ${old.text}`).toBe(200);
    await expectDead(r);
    await invariants(m, r);
  },
  toString: () => "rotate",
};

const revoke: Cmd = {
  check: () => true,
  async run(m, r) {
    const res = await internal(`/internal/v1/api-keys/${r.keyId}/revoke`, { method: "POST" });
    expectCode(res, 200);
    // Every secret of a revoked key answers api_key_revoked, also one a rotation had retired.
    r.dead = r.dead.map(([id, s, code]) => [id, s, id === r.keyId ? "api_key_revoked" : code]);
    for (const s of [r.secret, r.grace]) if (s) r.dead.push([r.keyId, s, "api_key_revoked"]);
    const minted = await mintKey(db(), { agencyId: r.t.agencyId, mintedByUserId: r.t.owner.id, mode: "test" });
    Object.assign(r, { keyId: minted.key.id, secret: minted.secret, grace: null });
    await expectDead(r);
    await invariants(m, r);
  },
  toString: () => "revoke",
};

const commands = [
  fc.option(fc.constantFrom(...NUMBERS), { nil: null }).map(create),
  listingIndex.map(activate),
  fc
    .tuple(listingIndex, fc.nat({ max: SETTABLE.length - 1 }))
    .map(([i, s]) => changeStatus(i, SETTABLE[s]!, SETTABLE[(s + 1) % SETTABLE.length]!)),
  listingIndex.map(cancel),
  fc.boolean().map(retry),
  fc.oneof({ weight: 3, arbitrary: fc.integer({ min: 1, max: 2 }) }, fc.constant(HOOK_CAP + 1)).map(registerHooks),
  fc.constant(rotate),
  fc.constant(revoke),
];

async function setup() {
  const t = await makeTenant();
  const model: Model = { listings: [], hooks: 0, mutation: null };
  const real: Real = { t, keyId: t.keyId, secret: t.key, grace: null, dead: [] };
  return { model, real };
}

/** At the end of a sequence: every listing of the agency is in the list with its modelled status. */
async function finalCheck(m: Model, r: Real) {
  const res = await api(r, "/api/v1/listings?limit=200");
  expectCode(res, 200);
  const listed = Object.fromEntries(res.json.data.map((l: any) => [l.listing_number, l.status]));
  expect(listed).toEqual(Object.fromEntries(m.listings.map((l) => [l.number, l.status])));
  expect(res.json.next_cursor).toBe("");
  await expectDead(r);
}

/** Runs `runs` short command sequences, each against a fresh agency, checking the model after every step. */
export async function runModel(runs: number, seed: number) {
  let sequences = 0;
  await fc.assert(
    fc.asyncProperty(fc.commands(commands, { maxCommands: 6 }), async (cmds) => {
      let state: Awaited<ReturnType<typeof setup>> | undefined;
      await fc.asyncModelRun(async () => {
        state = await setup();
        return state;
      }, cmds);
      await finalCheck(state!.model, state!.real);
      sequences++;
    }),
    { seed, numRuns: runs },
  );
  return sequences;
}
