import { exports } from "cloudflare:workers";
import createClient from "openapi-fetch";
import { afterEach, describe, expect, it, vi } from "vitest";
import { call, internal, makeTenant } from "./harness";

afterEach(() => vi.restoreAllMocks());

const hex = (bytes: ArrayBuffer) => [...new Uint8Array(bytes)].map((b) => b.toString(16).padStart(2, "0")).join("");

/** The documented verification: `sha256=` + hex HMAC-SHA256 of the raw body, keyed with the whole signing secret. */
async function verify(secret: string, rawBody: string, header: string | null) {
  const key = await crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  return header === `sha256=${hex(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(rawBody)))}`;
}

/** Outbound requests of the Worker (receivers, calendar feeds), answered by `answer`. */
function intercept(answer: (req: Request) => Response) {
  const seen: { req: Request; body: string }[] = [];
  vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    const req = new Request(input as RequestInfo, init as RequestInit);
    seen.push({ req, body: await req.clone().text() });
    return answer(req);
  });
  return seen;
}

describe("a client built from /api/v1/openapi.json with openapi-fetch", () => {
  it("creates, reads and pages listings, verifies a webhook, requests an upload and reads availability", async () => {
    const t = await makeTenant();
    const doc = (await call("/api/v1/openapi.json")).json;
    // The document's own server URL, unedited; requests reach the Worker in-process. The client is
    // untyped: openapi-typescript needs TypeScript 5's compiler API, which this project's TypeScript 7 lacks.
    const client = createClient<any>({
      baseUrl: doc.servers[0].url,
      fetch: (req: Request) => exports.default.fetch(req),
      headers: { "X-API-Key": t.key },
    });
    const idem = () => ({ "X-Idempotency-Key": crypto.randomUUID() });

    const created = [];
    for (const n of [1, 2, 3]) {
      const { data, response } = await client.POST("/api/v1/listings", {
        headers: idem(),
        body: { address: `${n} Client Street`, owner_user_id: t.owner.id, agent_one_id: t.agent.id },
      });
      expect(response.status).toBe(201);
      created.push(data.listing_number);
    }
    const one = await client.GET("/api/v1/listings/{listing_number}", {
      params: { path: { listing_number: created[0] } },
    });
    expect(one.data).toMatchObject({ listing_number: created[0], status: "Coming Soon", is_activated: false });

    const listed: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 5; page++) {
      const { data } = await client.GET("/api/v1/listings", { params: { query: { limit: 2, cursor } } });
      listed.push(...data.data.map((l: any) => l.listing_number));
      if (data.next_cursor === "") break;
      cursor = data.next_cursor;
    }
    expect(listed.sort()).toEqual([...created].sort());

    const hook = await client.POST("/api/v1/webhooks/endpoints", {
      headers: idem(),
      body: { url: "https://hooks.client.example/in", event_types: ["listing.created"] },
    });
    expect(hook.response.status).toBe(201);
    const deliveries = intercept(() => new Response("ok"));
    const test = await client.POST("/api/v1/webhooks/endpoints/{endpoint_id}/test", {
      headers: idem(),
      params: { path: { endpoint_id: hook.data.id } },
    });
    expect(test.data.delivered, JSON.stringify(test.data)).toBe(true);
    const delivery = deliveries.find((d) => d.req.url === "https://hooks.client.example/in")!;
    expect(await verify(hook.data.signing_secret, delivery.body, delivery.req.headers.get("X-Webhook-Signature"))).toBe(
      true,
    );
    expect(
      await verify(hook.data.signing_secret, `${delivery.body} `, delivery.req.headers.get("X-Webhook-Signature")),
    ).toBe(false);
    vi.restoreAllMocks();

    const upload = await client.POST("/api/v1/media/upload", {
      headers: idem(),
      body: { asset_type: "photo", content_type: "image/jpeg", size_bytes: 1_000_000 },
    });
    expect(upload.response.status, JSON.stringify(upload.error)).toBe(201);

    const put = await internal(`/internal/v1/users/${t.owner.id}/calendar`, {
      method: "PUT",
      body: { provider: "ics", feed_url: "https://cal.client.example/feed.ics" },
    });
    expect(put.status, put.text).toBe(200);
    intercept(
      () => new Response("BEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n", { headers: { "Content-Type": "text/calendar" } }),
    );
    const slots = await client.GET("/api/v1/scheduling/availability", {
      params: {
        query: { from: "2026-11-30T00:00:00-08:00", to: "2026-12-01T00:00:00-08:00", timezone: "America/Los_Angeles" },
      },
    });
    expect(slots.response.status, JSON.stringify(slots.error)).toBe(200);
    expect(slots.data.slots.length).toBeGreaterThan(0);
  });
});
