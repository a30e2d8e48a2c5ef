import { describe, expect, it, vi } from "vitest";
import { EVENT_TYPE_NAMES } from "../../src/domain/events/catalog";
import { call, makeTenant } from "../support/harness";

/**
 * An integrator with nothing but a sandbox key: every call below is the public API or a
 * test helper, made with that key. The tenant (an agency, its users and the key) is the
 * only thing set up beforehand, as the dashboard would have.
 */
describe("the sandbox with a test key alone", () => {
  it("produces every one of the 17 catalog event types, listed by the events API", async () => {
    const t = await makeTenant();
    const key = t.key;
    const api = async (method: string, path: string, body?: unknown, expected = [200, 201]) => {
      const r = await call(path, { key, method, body });
      expect(expected, `${method} ${path}: ${r.text}`).toContain(r.status);
      return r.json;
    };
    const helper = (path: string, body?: unknown) => api("POST", `/api/v1/test_helpers${path}`, body);
    const people = { owner_user_id: t.owner.id, agent_one_id: t.agent.id };

    // listing.created, listing.status_changed, listing.updated, listing.section_modified
    const listing = await api("POST", "/api/v1/listings", { address: "1 Sandbox Way", ...people });
    const n = listing.listing_number as string;
    await helper(`/listings/${n}/activate`);
    await api("PATCH", `/api/v1/listings/${n}/status`, { new_status: "Active" });
    await helper(`/listings/${n}/edit`, { address: "2 Sandbox Way" });
    await api("PATCH", `/api/v1/listings/${n}/sections/matterport`, {
      operation: "set",
      url: "https://my.matterport.com/show/?m=abc",
    });

    // appointment.scheduled, .rescheduled, .cancelled
    const shoot = { starts_at: "2030-01-07T17:00:00Z", ends_at: "2030-01-07T19:00:00Z" };
    const apt = await helper(`/listings/${n}/appointments`, shoot);
    await helper(`/listings/${n}/appointments/${apt.id}/reschedule`, {
      starts_at: "2030-01-08T17:00:00Z",
      ends_at: "2030-01-08T19:00:00Z",
    });
    await helper(`/listings/${n}/appointments/${apt.id}/cancel`);

    // appointment.orphan.detected: a shoot whose event the agent's sandbox calendar does not hold
    await helper(`/users/${t.agent.id}/calendar/busy_blocks`, shoot);
    await helper(`/listings/${n}/appointments`, { ...shoot, calendar_event_id: "not-on-the-calendar" });
    await helper("/calendar/reconcile");

    // invoice.payment_made, subscription.created, subscription.cancelled
    await helper(`/listings/${n}/invoices/pay`, {});
    const sub = await helper("/billing/subscriptions", {});
    await helper(`/billing/subscriptions/${sub.subscription_id}/cancel`);

    // user.signed_up, user.hierarchy_changed, user.deactivated
    const user = await helper("/users", { manager_id: t.owner.id });
    await helper(`/users/${user.id}/move`, { manager_id: t.teamLead.id });
    await helper(`/users/${user.id}/deactivate`, {});

    // media.delivery.completed: the agent's storage accepts; media.delivery.failed: the second listing's refuses
    await helper(`/users/${t.agent.id}/delivery_destination`, { behaviour: "accept" });
    await helper(`/users/${t.teamLead.id}/delivery_destination`, { behaviour: "refuse" });
    const refused = await api("POST", "/api/v1/listings", {
      address: "3 Sandbox Way",
      owner_user_id: t.owner.id,
      agent_one_id: t.teamLead.id,
    });
    for (const number of [n, refused.listing_number as string]) {
      await api("POST", "/api/v1/media/upload", {
        asset_type: "photo",
        content_type: "image/jpeg",
        size_bytes: 1024,
        listing_number: number,
      });
      await helper(`/listings/${number}/uploads/complete`);
    }

    // listing.cancelled (inside the no-fee window: the shoot is years away)
    await api("POST", `/api/v1/listings/${n}/cancel`, {});

    const listed = async () => {
      const types = new Set<string>();
      let cursor = "";
      for (let page = 0; page < 10; page++) {
        const r = await call(`/api/v1/events?limit=200${cursor ? `&cursor=${cursor}` : ""}`, { key });
        expect(r.status, r.text).toBe(200);
        for (const e of r.json.data) types.add(e.event_type);
        cursor = r.json.next_cursor;
        if (!cursor) break;
      }
      return types;
    };
    // The media deliveries run on the queue, so their events follow within seconds.
    await vi.waitFor(async () => expect([...(await listed())].sort()).toEqual([...EVENT_TYPE_NAMES].sort()), {
      timeout: 20_000,
      interval: 250,
    });
    expect(EVENT_TYPE_NAMES).toHaveLength(17);
  });
});
