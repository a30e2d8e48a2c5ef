import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { DEFAULT_SCOPES } from "../../src/domain/roles";
import {
  call,
  expectError,
  internal,
  makeListing,
  makeTenant,
  mockFetch,
  outbox,
  type Tenant,
} from "../support/harness";

afterEach(() => vi.restoreAllMocks());

const H = "/api/v1/test_helpers";
const helper = (t: Tenant, path: string, body?: unknown, opts: { idempotencyKey?: string } = {}) =>
  call(`${H}${path}`, { key: t.key, method: "POST", body, ...opts });
const dataOf = async (t: Tenant, type: string) => (await outbox(t.agencyId, type)).map((e) => e.data as any);

const SHOOT = { starts_at: "2026-12-02T17:00:00Z", ends_at: "2026-12-02T19:00:00Z" };

describe("listing helpers", () => {
  it("activate does what the dashboard does: the status can move afterwards", async () => {
    const t = await makeTenant();
    const listing = await makeListing(t);
    const before = await call(`/api/v1/listings/${listing.listing_number}/status`, {
      key: t.key,
      method: "PATCH",
      body: { new_status: "Active" },
    });
    expectError(before, 409, "listing_not_activated");
    const r = await helper(t, `/listings/${listing.listing_number}/activate`);
    expect(r.status, r.text).toBe(200);
    expect(r.json.is_activated).toBe(true);
    expect(r.headers.get("X-Rate-Limit-Limit")).toBe("100");
    const after = await call(`/api/v1/listings/${listing.listing_number}/status`, {
      key: t.key,
      method: "PATCH",
      body: { new_status: "Active" },
    });
    expect(after.status, after.text).toBe(200);
  });

  it("is held to the caller's agency: another agency's listing is listing_not_found", async () => {
    const t = await makeTenant();
    const other = await makeTenant();
    const theirs = await makeListing(other);
    expectError(await helper(t, `/listings/${theirs.listing_number}/activate`), 404, "listing_not_found");
    expectError(await helper(t, `/listings/${theirs.listing_number}/edit`, { address: "x" }), 404, "listing_not_found");
    expect(await dataOf(other, "listing.updated")).toEqual([]);
  });

  it("edit emits listing.updated naming the changed fields; people must be of the agency", async () => {
    const t = await makeTenant();
    const other = await makeTenant();
    const listing = await makeListing(t);
    const r = await helper(t, `/listings/${listing.listing_number}/edit`, {
      address: "1 New Street",
      agent_one_id: t.teamLead.id,
    });
    expect(r.status, r.text).toBe(200);
    expect(r.json.address).toBe("1 New Street");
    const [updated] = await dataOf(t, "listing.updated");
    expect(updated).toMatchObject({
      listing_number: listing.listing_number,
      changed_fields: ["address", "agent_one_id"],
      agent_one_id: t.teamLead.id,
    });
    const outsider = await helper(t, `/listings/${listing.listing_number}/edit`, { agent_two_id: other.agent.id });
    expectError(outsider, 422, "agent_not_in_hierarchy");
  });

  it(
    "pay_invoice applies a Stripe-format invoice.paid: the orders list it and invoice.payment_made " + "is emitted",
    async () => {
      const t = await makeTenant();
      const listing = await makeListing(t);
      const idem = crypto.randomUUID();
      const r = await helper(
        t,
        `/listings/${listing.listing_number}/invoices/pay`,
        { amount_minor: 12_500 },
        {
          idempotencyKey: idem,
        },
      );
      expect(r.status, r.text).toBe(200);
      expect(r.json).toMatchObject({ amount_minor: 12_500, currency: "usd", listing_number: listing.listing_number });
      expect(r.json.invoice_id).toMatch(/^in_/);
      expect(r.json.stripe_event).toMatchObject({ type: "invoice.paid", outcome: "applied" });
      const again = await helper(
        t,
        `/listings/${listing.listing_number}/invoices/pay`,
        { amount_minor: 12_500 },
        {
          idempotencyKey: idem,
        },
      );
      expect(again.headers.get("X-Idempotent-Replay")).toBe("true");
      expect(again.json.invoice_id).toBe(r.json.invoice_id);
      const paid = await dataOf(t, "invoice.payment_made");
      expect(paid, "one payment however often the same request is sent").toHaveLength(1);
      expect(paid[0]).toMatchObject({ invoice_id: r.json.invoice_id, amount_minor: 12_500, currency: "usd" });
      const orders = await call(`/api/v1/listings/${listing.listing_number}/orders`, { key: t.key });
      expect(orders.json.data.map((o: any) => o.type).sort(), orders.text).toEqual(["invoice", "payment"]);
    },
  );
});

describe("appointment helpers", () => {
  it(
    "schedule, reschedule and cancel emit their events; a cancelled one cannot move or be " + "cancelled again",
    async () => {
      const t = await makeTenant();
      const listing = await makeListing(t);
      const base = `/listings/${listing.listing_number}/appointments`;
      const s = await helper(t, base, { ...SHOOT, source: "order_form" });
      expect(s.status, s.text).toBe(201);
      expect(s.json).toMatchObject({ status: "scheduled", starts_at: "2026-12-02T17:00:00.000Z" });
      const moved = await helper(t, `${base}/${s.json.id}/reschedule`, {
        starts_at: "2026-12-03T17:00:00Z",
        ends_at: "2026-12-03T19:00:00Z",
      });
      expect(moved.status, moved.text).toBe(200);
      const cancelled = await helper(t, `${base}/${s.json.id}/cancel`);
      expect(cancelled.status, cancelled.text).toBe(200);
      expect(cancelled.json.status).toBe("cancelled");
      expect((await dataOf(t, "appointment.scheduled"))[0]).toMatchObject({
        appointment_id: s.json.id,
        source: "order_form",
      });
      expect((await dataOf(t, "appointment.rescheduled"))[0]).toMatchObject({
        previous_starts_at: "2026-12-02T17:00:00.000Z",
        starts_at: "2026-12-03T17:00:00.000Z",
      });
      expect((await dataOf(t, "appointment.cancelled"))[0]).toMatchObject({ reason: "dashboard" });
      expectError(await helper(t, `${base}/${s.json.id}/cancel`), 409, "appointment_not_scheduled");
      expectError(await helper(t, `${base}/${s.json.id}/reschedule`, SHOOT), 409, "appointment_not_scheduled");
    },
  );

  it("refuses backwards times, another listing's appointment and a cancelled listing", async () => {
    const t = await makeTenant();
    const a = await makeListing(t);
    const b = await makeListing(t);
    const backwards = { starts_at: SHOOT.ends_at, ends_at: SHOOT.starts_at };
    expectError(
      await helper(t, `/listings/${a.listing_number}/appointments`, backwards),
      422,
      "invalid_appointment_time",
    );
    const s = await helper(t, `/listings/${a.listing_number}/appointments`, SHOOT);
    const wrongListing = await helper(t, `/listings/${b.listing_number}/appointments/${s.json.id}/cancel`);
    expectError(wrongListing, 404, "appointment_not_found");
    await call(`/api/v1/listings/${b.listing_number}/cancel`, { key: t.key, body: {} });
    expectError(await helper(t, `/listings/${b.listing_number}/appointments`, SHOOT), 409, "listing_already_cancelled");
  });
});

// Monday 2026-11-30, working hours 09:00–17:00 UTC.
const DAY = "from=2026-11-30T00:00:00Z&to=2026-12-01T00:00:00Z&duration_minutes=120";

describe("sandbox calendar", () => {
  it("a busy block connects a sandbox calendar that availability reads, for the user and those below", async () => {
    const t = await makeTenant();
    expectError(await call(`/api/v1/scheduling/availability?${DAY}`, { key: t.key }), 403, "calendar_not_connected");
    const r = await helper(t, `/users/${t.owner.id}/calendar/busy_blocks`, {
      starts_at: "2026-11-30T11:00:00Z",
      ends_at: "2026-11-30T13:00:00Z",
    });
    expect(r.status, r.text).toBe(201);
    expect(r.json.calendar).toEqual({ provider: "sandbox", connected_user_id: t.owner.id });
    const own = await call(`/api/v1/scheduling/availability?${DAY}`, { key: t.key });
    expect(own.status, own.text).toBe(200);
    expect(own.json.calendar).toEqual({ provider: "sandbox", connected_user_id: t.owner.id });
    expect(own.json.slots.map((s: any) => s.start)).toEqual([
      "2026-11-30T09:00:00+00:00",
      "2026-11-30T13:00:00+00:00",
      "2026-11-30T15:00:00+00:00",
    ]);
    const below = await call(`/api/v1/scheduling/availability?${DAY}&user_id=${t.agent.id}`, { key: t.key });
    expect(below.json.calendar.connected_user_id).toBe(t.owner.id);
    expect(below.json.slots).toHaveLength(3);
  });

  it("a Google or ICS calendar is replaced only when asked", async () => {
    const t = await makeTenant();
    await internal(`/internal/v1/users/${t.owner.id}/calendar`, {
      method: "PUT",
      body: { provider: "ics", feed_url: "https://cal.example.com/feed.ics" },
    });
    const block = { starts_at: "2026-11-30T09:00:00Z", ends_at: "2026-11-30T10:00:00Z" };
    const refused = await helper(t, `/users/${t.owner.id}/calendar/busy_blocks`, block);
    expectError(refused, 409, "calendar_not_sandbox");
    expect(refused.json.error.details).toEqual({ user_id: t.owner.id, provider: "ics" });
    const replaced = await helper(t, `/users/${t.owner.id}/calendar/busy_blocks`, { ...block, replace_calendar: true });
    expect(replaced.status, replaced.text).toBe(201);
    const fetches = mockFetch();
    const r = await call(`/api/v1/scheduling/availability?${DAY}`, { key: t.key });
    expect(r.json.calendar.provider).toBe("sandbox");
    expect(r.json.slots[0].start, "09:00–11:00 overlaps the block").toBe("2026-11-30T11:00:00+00:00");
    expect(fetches, "a sandbox calendar is read without any outbound call").not.toHaveBeenCalled();
  });

  it("refuses backwards times and users of other agencies", async () => {
    const t = await makeTenant();
    const other = await makeTenant();
    const backwards = { starts_at: "2026-11-30T10:00:00Z", ends_at: "2026-11-30T09:00:00Z" };
    expectError(
      await helper(t, `/users/${t.owner.id}/calendar/busy_blocks`, backwards),
      422,
      "invalid_appointment_time",
    );
    const theirs = await helper(t, `/users/${other.owner.id}/calendar/busy_blocks`, {
      starts_at: "2026-11-30T09:00:00Z",
      ends_at: "2026-11-30T10:00:00Z",
    });
    expectError(theirs, 404, "user_not_found");
  });

  it("reconciliation reports a missing and a moved shoot once, and only for the caller's agency", async () => {
    const t = await makeTenant();
    const other = await makeTenant();
    for (const tenant of [t, other]) {
      const block = await helper(tenant, `/users/${tenant.agent.id}/calendar/busy_blocks`, {
        ...SHOOT,
        event_id: "shoot-on-calendar",
      });
      expect(block.status, block.text).toBe(201);
      const listing = await makeListing(tenant);
      for (const id of ["shoot-on-calendar", "shoot-not-on-calendar"]) {
        const s = await helper(tenant, `/listings/${listing.listing_number}/appointments`, {
          ...SHOOT,
          calendar_event_id: id,
        });
        expect(s.status, s.text).toBe(201);
      }
    }
    const first = await helper(t, "/calendar/reconcile");
    expect(first.status, first.text).toBe(200);
    expect(first.json).toEqual({ checked: 2, detected: 1, resolved: 0, skipped: 0 });
    expect((await dataOf(t, "appointment.orphan.detected")).map((d) => d.discrepancy)).toEqual(["missing"]);
    expect(await dataOf(other, "appointment.orphan.detected"), "another agency's shoots are not checked").toEqual([]);

    // The block moves: the shoot stored on it is now off by a day.
    await helper(t, `/users/${t.agent.id}/calendar/busy_blocks`, {
      starts_at: "2026-12-03T17:00:00Z",
      ends_at: "2026-12-03T19:00:00Z",
      event_id: "shoot-on-calendar",
    });
    const second = await helper(t, "/calendar/reconcile");
    expect(second.json).toEqual({ checked: 2, detected: 1, resolved: 0, skipped: 0 });
    const third = await helper(t, "/calendar/reconcile");
    expect(third.json.detected, "an open discrepancy is reported once").toBe(0);
    const found = await dataOf(t, "appointment.orphan.detected");
    expect(found.map((d) => d.discrepancy).sort()).toEqual(["missing", "moved"]);
    expect(found.find((d) => d.discrepancy === "moved")).toMatchObject({
      calendar_event_id: "shoot-on-calendar",
      expected_starts_at: "2026-12-02T17:00:00.000Z",
      calendar_starts_at: "2026-12-03T17:00:00.000Z",
    });
  });
});

describe("billing helpers", () => {
  it("a subscription starts and ends through Stripe-format events", async () => {
    const t = await makeTenant();
    const created = await helper(t, "/billing/subscriptions", { plan: "Pro monthly" });
    expect(created.status, created.text).toBe(201);
    expect(created.json.subscription_id).toMatch(/^sub_/);
    expect(created.json.stripe_event).toMatchObject({ type: "customer.subscription.created", outcome: "applied" });
    const ended = await helper(t, `/billing/subscriptions/${created.json.subscription_id}/cancel`);
    expect(ended.status, ended.text).toBe(200);
    expect(ended.json.stripe_event).toMatchObject({ type: "customer.subscription.deleted", outcome: "applied" });
    expect((await dataOf(t, "subscription.created"))[0]).toMatchObject({
      subscription_id: created.json.subscription_id,
      plan: "Pro monthly",
      status: "active",
    });
    expect((await dataOf(t, "subscription.cancelled"))[0]).toMatchObject({
      subscription_id: created.json.subscription_id,
    });
    expectError(await helper(t, "/billing/subscriptions/not-a-sub/cancel"), 422, "validation_string_pattern");
  });
});

describe("subscription records", () => {
  const start = async (t: Tenant) => {
    const r = await helper(t, "/billing/subscriptions", {});
    expect(r.status, r.text).toBe(201);
    return r.json.subscription_id as string;
  };
  const cancel = (t: Tenant, id: string) => helper(t, `/billing/subscriptions/${id}/cancel`);

  it("another agency's or an unknown subscription is 404 subscription_not_found and emits nothing", async () => {
    const t = await makeTenant();
    const other = await makeTenant();
    const theirs = await start(other);
    const r = await cancel(t, theirs);
    expectError(r, 404, "subscription_not_found");
    expectError(await cancel(t, "sub_neverstarted"), 404, "subscription_not_found");
    expect(await dataOf(t, "subscription.cancelled")).toEqual([]);
    expect(await dataOf(other, "subscription.cancelled")).toEqual([]);
    const still = await cancel(other, theirs);
    expect(still.status, still.text).toBe(200);
    expect(still.json).toMatchObject({ subscription_id: theirs, status: "cancelled" });
  });

  it("a subscription ends once: cancelling again answers it ended and emits nothing", async () => {
    const t = await makeTenant();
    const id = await start(t);
    const first = await cancel(t, id);
    expect(first.status, first.text).toBe(200);
    expect(first.json).toMatchObject({
      subscription_id: id,
      status: "cancelled",
      stripe_event: { outcome: "applied" },
    });
    const again = await cancel(t, id);
    expect(again.status, again.text).toBe(200);
    expect(again.json).toMatchObject({
      subscription_id: id,
      status: "cancelled",
      cancelled_at: first.json.cancelled_at,
      stripe_event: { outcome: "ignored" },
    });
    expect(await dataOf(t, "subscription.cancelled")).toEqual([
      { subscription_id: id, cancelled_at: first.json.cancelled_at },
    ]);
  });

  it("concurrent cancels of one subscription emit one subscription.cancelled", async () => {
    const t = await makeTenant();
    const id = await start(t);
    const answers = await Promise.all([cancel(t, id), cancel(t, id), cancel(t, id)]);
    for (const r of answers) expect(r.status, r.text).toBe(200);
    expect(answers.map((r) => r.json.stripe_event.outcome).sort()).toEqual(["applied", "ignored", "ignored"]);
    expect(await dataOf(t, "subscription.cancelled")).toHaveLength(1);
  });
});

describe("media helpers", () => {
  async function requestUpload(t: Tenant, listingNumber: string) {
    const r = await call("/api/v1/media/upload", {
      key: t.key,
      body: { asset_type: "photo", content_type: "image/jpeg", size_bytes: 2048, listing_number: listingNumber },
    });
    expect(r.status, r.text).toBe(201);
    return r.json.upload_id as string;
  }

  it("completing the uploads delivers to an accepting sandbox destination: media.delivery.completed", async () => {
    const t = await makeTenant();
    const listing = await makeListing(t);
    const dest = await helper(t, `/users/${t.agent.id}/delivery_destination`, { path_prefix: "media" });
    expect(dest.status, dest.text).toBe(200);
    expect(dest.json).toEqual({ user_id: t.agent.id, behaviour: "accept", path_prefix: "media" });
    const ids = [await requestUpload(t, listing.listing_number), await requestUpload(t, listing.listing_number)];
    const r = await helper(t, `/listings/${listing.listing_number}/uploads/complete`);
    expect(r.status, r.text).toBe(200);
    expect(r.json.completed_upload_ids).toEqual(ids);
    expect(r.json.delivery_id).toMatch(/^dlv_/);
    expect(r.json.more_pending).toBe(false);
    await vi.waitFor(async () => expect((await dataOf(t, "media.delivery.completed")).length).toBe(1), {
      timeout: 15_000,
      interval: 200,
    });
    const [completed] = await dataOf(t, "media.delivery.completed");
    expect(completed).toMatchObject({
      delivery_id: r.json.delivery_id,
      summary: { files_total: 2, files_delivered: 2, files_failed: 0 },
    });
    const stored = await env.UPLOADS.list({
      prefix: `sandbox-deliveries/${t.agencyId}/media/${listing.listing_number}/`,
    });
    expect(stored.objects).toHaveLength(2);
    expectError(await helper(t, `/listings/${listing.listing_number}/uploads/complete`), 409, "no_pending_uploads");
  });

  it("a refusing sandbox destination fails the delivery after its first attempt: media.delivery.failed", async () => {
    const t = await makeTenant();
    const listing = await makeListing(t);
    await helper(t, `/users/${t.agent.id}/delivery_destination`, { behaviour: "refuse" });
    await requestUpload(t, listing.listing_number);
    const r = await helper(t, `/listings/${listing.listing_number}/uploads/complete`);
    expect(r.status, r.text).toBe(200);
    await vi.waitFor(async () => expect((await dataOf(t, "media.delivery.failed")).length).toBe(1), {
      timeout: 15_000,
      interval: 200,
    });
    expect((await dataOf(t, "media.delivery.failed"))[0]).toMatchObject({
      delivery_id: r.json.delivery_id,
      attempts: 1,
    });
    expect(await dataOf(t, "media.delivery.completed")).toEqual([]);
  });

  it("without a destination the uploads complete but nothing is delivered", async () => {
    const t = await makeTenant();
    const listing = await makeListing(t);
    await requestUpload(t, listing.listing_number);
    const r = await helper(t, `/listings/${listing.listing_number}/uploads/complete`);
    expect(r.status, r.text).toBe(200);
    expect(r.json.delivery_id).toBeNull();
    const other = await makeTenant();
    expectError(await helper(t, `/users/${other.agent.id}/delivery_destination`, {}), 404, "user_not_found");
  });
});

describe("user helpers", () => {
  it("create, move and deactivate emit the user events, inside the caller's agency", async () => {
    const t = await makeTenant();
    const created = await helper(t, "/users", { manager_id: t.teamLead.id, role: "assistant", source: "invite" });
    expect(created.status, created.text).toBe(201);
    expect(created.json).toMatchObject({ role: "assistant", managerId: t.teamLead.id, is_active: true });
    const listed = await call(`/api/v1/users/${created.json.id}`, { key: t.key });
    expect(listed.status, listed.text).toBe(200);
    const moved = await helper(t, `/users/${created.json.id}/move`, { manager_id: t.agent.id });
    expect(moved.status, moved.text).toBe(200);
    expect(moved.json.managerId).toBe(t.agent.id);
    const gone = await helper(t, `/users/${created.json.id}/deactivate`, { reason: "suspended" });
    expect(gone.status, gone.text).toBe(200);
    expect(gone.json.is_active).toBe(false);
    expect((await dataOf(t, "user.signed_up")).at(-1)).toMatchObject({ user_id: created.json.id, source: "invite" });
    expect(await dataOf(t, "user.hierarchy_changed")).toEqual([
      { user_id: created.json.id, managerId: t.agent.id, previous_manager_id: t.teamLead.id, agency_changed: false },
    ]);
    expect(await dataOf(t, "user.deactivated")).toEqual([{ user_id: created.json.id, reason: "suspended" }]);
  });

  it("refuses another agency's users, cycles, a non-owner at the top and a taken email", async () => {
    const t = await makeTenant();
    const other = await makeTenant();
    expectError(await helper(t, "/users", { manager_id: other.owner.id }), 404, "user_not_found");
    expectError(await helper(t, `/users/${t.agent.id}/move`, { manager_id: other.owner.id }), 404, "user_not_found");
    expectError(await helper(t, `/users/${other.agent.id}/deactivate`, {}), 404, "user_not_found");
    expectError(await helper(t, `/users/${t.teamLead.id}/move`, { manager_id: t.agent.id }), 422, "hierarchy_cycle");
    expectError(await helper(t, `/users/${t.agent.id}/move`, { manager_id: null }), 422, "invalid_role");
    const email = `taken-${crypto.randomUUID()}@example.test`;
    expect((await helper(t, "/users", { manager_id: t.owner.id, email })).status).toBe(201);
    expectError(await helper(t, "/users", { manager_id: t.owner.id, email }), 409, "user_email_taken");
    expect(await dataOf(other, "user.hierarchy_changed")).toEqual([]);
  });

  it("another agency's email answers exactly like a new one: emails are unique per agency", async () => {
    const t = await makeTenant();
    const other = await makeTenant();
    const email = `shared-${crypto.randomUUID()}@example.test`;
    const theirs = await helper(other, "/users", { manager_id: other.owner.id, email });
    expect(theirs.status, theirs.text).toBe(201);
    const fresh = await helper(t, "/users", {
      manager_id: t.owner.id,
      email: `new-${crypto.randomUUID()}@example.test`,
    });
    const taken = await helper(t, "/users", { manager_id: t.owner.id, email: email.toUpperCase() });
    expect(taken.status, taken.text).toBe(fresh.status);
    expect(Object.keys(taken.json).sort()).toEqual(Object.keys(fresh.json).sort());
    expect(taken.json).toMatchObject({ email, managerId: t.owner.id, is_active: true });
    expect(taken.json.id).not.toBe(theirs.json.id);
    expect(taken.text).not.toContain(other.agencyId);
    // Inside the caller's own agency the email is taken, as the caller can already see in its users list.
    const again = await helper(t, "/users", { manager_id: t.owner.id, email });
    expectError(again, 409, "user_email_taken");
    expect(again.json.error.details).toEqual({ email });
  });
});

describe("guards", () => {
  it("each helper needs the scope of what it changes; webhooks:write opens none of them", async () => {
    const t = await makeTenant({ scopes: ["listings:read", "webhooks:read", "webhooks:write"] });
    const listing = await makeListing(await makeTenant());
    const cases: [string, unknown, string][] = [
      [`/listings/${listing.listing_number}/activate`, undefined, "listings:write"],
      [`/listings/${listing.listing_number}/invoices/pay`, {}, "orders:read"],
      [`/users/${t.agent.id}/delivery_destination`, {}, "media:write"],
      [`/users/${t.agent.id}/calendar/busy_blocks`, SHOOT, "scheduling:read"],
      ["/calendar/reconcile", undefined, "scheduling:read"],
      ["/users", { manager_id: t.owner.id }, "users:read"],
      [`/users/${t.agent.id}/move`, { manager_id: t.owner.id }, "users:read"],
      [`/users/${t.agent.id}/deactivate`, {}, "users:read"],
      ["/billing/subscriptions", {}, "orders:read"],
      ["/billing/subscriptions/sub_missing/cancel", undefined, "orders:read"],
    ];
    for (const [path, body, scope] of cases) {
      const r = await helper(t, path, body);
      expectError(r, 403, "auth.scope_denied");
      expect(r.json.error.details.required_scope, `${path}: ${r.text}`).toBe(scope);
    }
    expect(await dataOf(t, "user.deactivated")).toEqual([]);
  });

  it("a helper that changes what the API only reads needs a full key, not its read scope alone", async () => {
    const users = await makeTenant({ scopes: ["users:read"] });
    const before = (await dataOf(users, "user.signed_up")).length;
    const refused = await helper(users, "/users", { manager_id: users.owner.id });
    expectError(refused, 403, "auth.scope_denied");
    expect(refused.json.error.details.missing_scopes).toEqual(DEFAULT_SCOPES.filter((s) => s !== "users:read"));
    expect(await dataOf(users, "user.signed_up")).toHaveLength(before);
    const calendars = await makeTenant({ scopes: ["scheduling:read", "listings:read", "listings:write"] });
    const replaced = await helper(calendars, `/users/${calendars.agent.id}/calendar/busy_blocks`, {
      ...SHOOT,
      replace_calendar: true,
    });
    expectError(replaced, 403, "auth.scope_denied");
    expect(replaced.json.error.details.missing_scopes).not.toContain("scheduling:read");
    const billing = await makeTenant();
    const subscribed = await helper(billing, "/billing/subscriptions", {});
    expect(subscribed.status, subscribed.text).toBe(201);
    const created = await helper(billing, "/users", { manager_id: billing.owner.id });
    expect(created.status, created.text).toBe(201);
  });

  it("a mutating helper needs an idempotency key", async () => {
    const t = await makeTenant();
    const r = await call(`${H}/calendar/reconcile`, { key: t.key, method: "POST", idempotencyKey: null });
    expectError(r, 400, "idempotency.missing");
  });
});
