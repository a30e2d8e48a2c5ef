import { exports } from "cloudflare:workers";
import createClient from "openapi-fetch";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { paths } from "../generated/public-openapi.d.ts";
// Both generated from the served document by scripts/openapi-types.ts (`npm run typecheck` runs it).
import generated from "../generated/public-openapi.json";
import { call, internal, makeTenant, mockFetch } from "../support/harness";

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

/** The data of a response that answered `status`; the body is shown otherwise. */
function answered<T>(result: { data?: T; error?: unknown; response: Response }, status: number): T {
  expect(result.response.status, JSON.stringify(result.error)).toBe(status);
  return result.data!;
}

/** Outbound requests of the Worker (receivers, calendar feeds), answered by `answer`. */
function intercept(answer: (req: Request) => Response) {
  const seen: { req: Request; body: string }[] = [];
  mockFetch(async (req) => {
    seen.push({ req, body: await req.clone().text() });
    return answer(req);
  });
  return seen;
}

describe("a client generated from /api/v1/openapi.json with openapi-typescript and openapi-fetch", () => {
  it("was generated from the document the Worker serves", async () => {
    const served = await call("/api/v1/openapi.json");
    expect(served.status, served.text).toBe(200);
    // A stale generation (the routes changed since `npm run typecheck`) would type a client for another API.
    expect(served.json, "test/generated is stale: run npm run typecheck").toEqual(generated);
  });

  it("creates, reads and pages listings, verifies a webhook, requests an upload and reads availability", async () => {
    const t = await makeTenant();
    const doc = (await call("/api/v1/openapi.json")).json;
    // The document's own server URL, unedited; requests reach the Worker in-process.
    const client = createClient<paths>({
      baseUrl: doc.servers[0].url,
      fetch: (req: Request) => exports.default.fetch(req),
      headers: { "X-API-Key": t.key },
    });
    const idem = () => ({ header: { "X-Idempotency-Key": crypto.randomUUID() } });

    const created: string[] = [];
    for (const n of [1, 2, 3]) {
      const listing = answered(
        await client.POST("/api/v1/listings", {
          params: idem(),
          body: { address: `${n} Client Street`, owner_user_id: t.owner.id, agent_one_id: t.agent.id },
        }),
        201,
      );
      created.push(listing.listing_number);
    }
    const one = answered(
      await client.GET("/api/v1/listings/{listing_number}", { params: { path: { listing_number: created[0]! } } }),
      200,
    );
    expect(one).toMatchObject({ listing_number: created[0], status: "Coming Soon", is_activated: false });

    const listed: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 5; page++) {
      const data = answered(await client.GET("/api/v1/listings", { params: { query: { limit: 2, cursor } } }), 200);
      listed.push(...data.data.map((l) => l.listing_number));
      if (data.next_cursor === "") break;
      cursor = data.next_cursor;
    }
    expect(listed.sort()).toEqual([...created].sort());

    const hook = answered(
      await client.POST("/api/v1/webhooks/endpoints", {
        params: idem(),
        body: { url: "https://hooks.client.example/in", event_types: ["listing.created"] },
      }),
      201,
    );
    const deliveries = intercept(() => new Response("ok"));
    const test = answered(
      await client.POST("/api/v1/webhooks/endpoints/{endpoint_id}/test", {
        params: { ...idem(), path: { endpoint_id: hook.id } },
      }),
      200,
    );
    expect(test.delivered, JSON.stringify(test)).toBe(true);
    const delivery = deliveries.find((d) => d.req.url === "https://hooks.client.example/in")!;
    const signature = delivery.req.headers.get("X-Webhook-Signature");
    expect(await verify(hook.signing_secret, delivery.body, signature)).toBe(true);
    expect(await verify(hook.signing_secret, `${delivery.body} `, signature)).toBe(false);
    vi.restoreAllMocks();

    const upload = answered(
      await client.POST("/api/v1/media/upload", {
        params: idem(),
        body: { asset_type: "photo", content_type: "image/jpeg", size_bytes: 1_000_000 },
      }),
      201,
    );
    expect(upload.url, JSON.stringify(upload)).toMatch(/^https:\/\//);

    const put = await internal(`/internal/v1/users/${t.owner.id}/calendar`, {
      method: "PUT",
      body: { provider: "ics", feed_url: "https://cal.client.example/feed.ics" },
    });
    expect(put.status, put.text).toBe(200);
    intercept(
      () => new Response("BEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n", { headers: { "Content-Type": "text/calendar" } }),
    );
    const slots = answered(
      await client.GET("/api/v1/scheduling/availability", {
        params: {
          query: {
            from: "2026-11-30T00:00:00-08:00",
            to: "2026-12-01T00:00:00-08:00",
            timezone: "America/Los_Angeles",
          },
        },
      }),
      200,
    );
    expect(slots.slots.length).toBeGreaterThan(0);
  });
});
