// `ops trigger <event_type>`: fires one event of the catalog through the public API and
// the sandbox's test helpers, creating what it needs first (a listing, a user, a sandbox
// calendar or storage), then waits until the events API lists it.
import { randomBytes } from "node:crypto";
import { type Call, describeAnswer } from "./ops-api.ts";

const WAIT_MS = 60_000;
const H = "/api/v1/test_helpers";

type Json = Record<string, any>;
/** What the event's `data` must hold to be the one this run fired. */
type Match = Record<string, unknown>;

class Steps {
  readonly api: Call;
  readonly print: (line: string) => void;

  constructor(api: Call, print: (line: string) => void) {
    this.api = api;
    this.print = print;
  }

  async run(method: string, path: string, body?: unknown): Promise<Json> {
    const r = await this.api(method, path, body);
    this.print(`  ${method} ${path} → ${r.status}`);
    if (r.status < 200 || r.status > 299) throw new Error(`${method} ${path} answered ${describeAnswer(r)}`);
    return r.json as Json;
  }

  /** The top of the agency's hierarchy: the user listings and new users are made under. */
  async top(): Promise<string> {
    const users = await this.run("GET", "/api/v1/users?limit=200");
    const top = (users.data as Json[]).find((u) => u.managerId === null && u.is_active);
    if (!top) throw new Error("The agency has no active user at the top of its hierarchy.");
    return top.id as string;
  }

  user(managerId: string) {
    return this.run("POST", `${H}/users`, { manager_id: managerId, name: "Trigger fixture" });
  }

  listing(owner: string, agent = owner) {
    const address = `${randomBytes(3).toString("hex")} Trigger Street`;
    return this.run("POST", "/api/v1/listings", { address, owner_user_id: owner, agent_one_id: agent });
  }
}

/** A shoot in 30 days, 17:00–19:00 UTC: far inside the listing's no-fee window. */
function shoot(dayOffset = 30) {
  const start = new Date(Date.now() + dayOffset * 86_400_000);
  start.setUTCHours(17, 0, 0, 0);
  return { starts_at: start.toISOString(), ends_at: new Date(start.getTime() + 2 * 3_600_000).toISOString() };
}

type Recipe = (s: Steps) => Promise<Match>;

async function listed(s: Steps, activate = false) {
  const l = await s.listing(await s.top());
  if (activate) await s.run("POST", `${H}/listings/${l.listing_number}/activate`);
  return l.listing_number as string;
}

async function appointment(s: Steps) {
  const n = await listed(s);
  const a = await s.run("POST", `${H}/listings/${n}/appointments`, shoot());
  return { n, id: a.id as string };
}

async function media(s: Steps, behaviour: "accept" | "refuse"): Promise<Match> {
  const agent = await s.user(await s.top());
  await s.run("POST", `${H}/users/${agent.id}/delivery_destination`, { behaviour });
  const l = await s.listing(await s.top(), agent.id);
  const upload = { asset_type: "photo", content_type: "image/jpeg", size_bytes: 1024 };
  await s.run("POST", "/api/v1/media/upload", { ...upload, listing_number: l.listing_number });
  await s.run("POST", `${H}/listings/${l.listing_number}/uploads/complete`);
  return { listing_number: l.listing_number };
}

const RECIPES: Record<string, Recipe> = {
  "listing.created": async (s) => ({ listing_number: await listed(s) }),
  "listing.updated": async (s) => {
    const n = await listed(s);
    await s.run("POST", `${H}/listings/${n}/edit`, { address: `${randomBytes(3).toString("hex")} Edited Street` });
    return { listing_number: n };
  },
  "listing.status_changed": async (s) => {
    const n = await listed(s, true);
    await s.run("PATCH", `/api/v1/listings/${n}/status`, { new_status: "Active" });
    return { listing_number: n };
  },
  "listing.cancelled": async (s) => {
    const n = await listed(s);
    await s.run("POST", `/api/v1/listings/${n}/cancel`, {});
    return { listing_number: n };
  },
  "listing.section_modified": async (s) => {
    const n = await listed(s);
    await s.run("PATCH", `/api/v1/listings/${n}/sections/matterport`, {
      operation: "set",
      url: "https://my.matterport.com/show/?m=trigger",
    });
    return { listing_number: n };
  },
  "appointment.scheduled": async (s) => ({ appointment_id: (await appointment(s)).id }),
  "appointment.rescheduled": async (s) => {
    const { n, id } = await appointment(s);
    await s.run("POST", `${H}/listings/${n}/appointments/${id}/reschedule`, shoot(31));
    return { appointment_id: id };
  },
  "appointment.cancelled": async (s) => {
    const { n, id } = await appointment(s);
    await s.run("POST", `${H}/listings/${n}/appointments/${id}/cancel`);
    return { appointment_id: id };
  },
  "appointment.orphan.detected": async (s) => {
    // A new agent with a sandbox calendar, and a shoot stored on an event that calendar does not hold.
    const agent = await s.user(await s.top());
    await s.run("POST", `${H}/users/${agent.id}/calendar/busy_blocks`, shoot());
    const l = await s.listing(await s.top(), agent.id);
    const a = await s.run("POST", `${H}/listings/${l.listing_number}/appointments`, {
      ...shoot(),
      calendar_event_id: `trigger-missing-${randomBytes(4).toString("hex")}`,
    });
    await s.run("POST", `${H}/calendar/reconcile`);
    return { subject_id: a.id };
  },
  "invoice.payment_made": async (s) => {
    const n = await listed(s);
    const paid = await s.run("POST", `${H}/listings/${n}/invoices/pay`, {});
    return { invoice_id: paid.invoice_id };
  },
  "subscription.created": async (s) => ({
    subscription_id: (await s.run("POST", `${H}/billing/subscriptions`, {})).subscription_id,
  }),
  "subscription.cancelled": async (s) => {
    const sub = await s.run("POST", `${H}/billing/subscriptions`, {});
    await s.run("POST", `${H}/billing/subscriptions/${sub.subscription_id}/cancel`);
    return { subscription_id: sub.subscription_id };
  },
  "media.delivery.completed": (s) => media(s, "accept"),
  "media.delivery.failed": (s) => media(s, "refuse"),
  "user.signed_up": async (s) => ({ user_id: (await s.user(await s.top())).id }),
  "user.hierarchy_changed": async (s) => {
    const top = await s.top();
    const [manager, user] = [await s.user(top), await s.user(top)];
    await s.run("POST", `${H}/users/${user.id}/move`, { manager_id: manager.id });
    return { user_id: user.id };
  },
  "user.deactivated": async (s) => {
    const user = await s.user(await s.top());
    await s.run("POST", `${H}/users/${user.id}/deactivate`, {});
    return { user_id: user.id };
  },
};

export const TRIGGER_TYPES = Object.keys(RECIPES);

export const TRIGGER_USAGE = `Usage: npm run ops -- trigger <event_type> [--key sk_test_…]

Fires one event of the given type in your sandbox agency, through the public API and the
test helpers (/api/v1/test_helpers/…), creating the fixtures it needs first. Fixtures emit
their own events (a listing fires listing.created, a new user user.signed_up), which
ops listen forwards too. Waits until GET /api/v1/events lists the event (at most ${WAIT_MS / 1000} s).

Event types:
${TRIGGER_TYPES.map((t) => `  ${t}`).join("\n")}

The key: --key, else ALMS_API_KEY (npm run dev prints a sandbox key when it starts).`;

/** Runs the recipe of `type`, then waits for its event; answers the exit status. */
export async function trigger(api: Call, type: string, print: (line: string) => void): Promise<number> {
  const recipe = Object.hasOwn(RECIPES, type) ? RECIPES[type] : undefined;
  if (!recipe) {
    print(`Unknown event type '${type}'.\n\n${TRIGGER_USAGE}`);
    return 2;
  }
  const since = new Date(Date.now() - 5_000).toISOString();
  const steps = new Steps(api, print);
  print(`Triggering ${type}:`);
  const match = await recipe(steps);
  const deadline = Date.now() + WAIT_MS;
  for (let delay = 250; Date.now() < deadline; delay = Math.min(delay * 2, 2_000)) {
    const r = await api("GET", `/api/v1/events?type=${type}&limit=200&created_after=${encodeURIComponent(since)}`);
    if (r.status !== 200) throw new Error(`GET /api/v1/events answered ${describeAnswer(r)}`);
    const event = (r.json.data as Json[]).find((e) =>
      Object.entries(match).every(([field, value]) => e.data?.[field] === value),
    );
    if (event) {
      print(`Triggered ${type}: ${event.event_id}`);
      return 0;
    }
    await new Promise((resolve) => setTimeout(resolve, delay));
  }
  print(`The ${type} event did not appear in GET /api/v1/events within ${WAIT_MS / 1000} s.`);
  return 1;
}
