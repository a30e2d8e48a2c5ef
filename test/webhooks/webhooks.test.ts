import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { verify } from "@octokit/webhooks-methods";
import { eq } from "drizzle-orm";
import { Webhook } from "standardwebhooks";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { webhookEndpoints } from "../../src/db/schema";
import { EVENT_TYPE_NAMES, EVENT_TYPES } from "../../src/domain/events/catalog";
import { unseal, webhookSigningSecret } from "../../src/domain/sealed-columns";
import worker from "../../src/index";
import { keyringOf } from "../../src/lib/crypto/keyring";
import { checkOutboundUrl } from "../../src/lib/outbound-url";
import { newSigningSecret, signatureHeaders, signPayload, standardSignature } from "../../src/webhooks/signing";
import { BASE, call, db, expectError, makeTenant, mockFetch, type Tenant } from "../support/harness";

const register = (t: Tenant, body: Record<string, unknown>) => call("/api/v1/webhooks/endpoints", { key: t.key, body });

// Changes here are drained to the queue after each request; keep those messages from the
// real consumer, which would call these made-up receivers once the test is over.
beforeEach(() => {
  vi.spyOn(env.WEBHOOK_QUEUE, "sendBatch").mockResolvedValue({} as QueueSendBatchResponse);
  mockFetch(() => new Response("ok"));
});
afterEach(() => vi.restoreAllMocks());

/** Every row of every table of the database, as text. */
async function wholeDatabase(): Promise<string> {
  const tables = await env.DB.prepare(
    "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%'",
  ).all<{ name: string }>();
  expect(tables.results.map((t) => t.name)).toContain("webhook_endpoints");
  const dumps = await Promise.all(
    tables.results.map(async ({ name }) =>
      JSON.stringify((await env.DB.prepare(`SELECT * FROM "${name}"`).all()).results),
    ),
  );
  return dumps.join("\n");
}

describe("the event catalog", () => {
  it("lists the 17 public types with api_version and a payload_schema from the event's own schema", async () => {
    const t = await makeTenant();
    const r = await call("/api/v1/webhooks/events", { key: t.key });
    expect(r.status, r.text).toBe(200);
    expect(r.json.data.map((e: any) => e.event_type)).toEqual(EVENT_TYPE_NAMES);
    expect(r.json.data).toHaveLength(17);
    const created = r.json.data.find((e: any) => e.event_type === "listing.created");
    expect(created).toMatchObject({ category: "Listing", api_version: EVENT_TYPES["listing.created"].apiVersion });
    expect(created.payload_schema).toMatchObject({
      type: "object",
      properties: { listing_number: { type: "string" }, status: { type: "string" } },
    });
    expect(created.payload_schema.required).toEqual(expect.arrayContaining(["listing_number", "status"]));
    expect(
      created.payload_schema.properties.listing_number,
      "field descriptions and examples come along",
    ).toMatchObject({ description: expect.any(String), examples: ["k3v9x2a"] });
    // Fields may be added within an api_version, so no schema may close an object.
    expect(JSON.stringify(r.json.data.map((e: any) => e.payload_schema))).not.toContain('"additionalProperties":false');
    const media = r.json.data.find((e: any) => e.event_type === "media.delivery.completed");
    expect(media.payload_schema.properties.summary.required).toEqual(
      expect.arrayContaining(["files_total", "files_delivered", "files_failed"]),
    );
    expect(r.headers.get("X-Rate-Limit-Limit")).toBe("60");
  });

  it("the OpenAPI description lists every event under webhooks, with the same data schema", async () => {
    const doc = (await call("/api/v1/openapi.json")).json;
    expect(Object.keys(doc.webhooks).sort()).toEqual([...EVENT_TYPE_NAMES].sort());
    const body = doc.webhooks["listing.status_changed"].post.requestBody.content["application/json"].schema;
    expect(body.required).toEqual(["event_id", "event_type", "api_version", "timestamp", "nonce", "data"]);
    expect(body.properties.data.properties).toHaveProperty("previous_status");
  });

  it("needs webhooks:read", async () => {
    const t = await makeTenant({ scopes: ["listings:read"] });
    expectError(await call("/api/v1/webhooks/events", { key: t.key }), 403, "auth.scope_denied");
  });
});

describe("registering endpoints", () => {
  it("answers the whsec_ secret once, stores it sealed, never lists it", async () => {
    const t = await makeTenant();
    const r = await register(t, {
      url: "https://hooks.example.com/alms",
      event_types: ["listing.created", "listing.created", "listing.cancelled"],
      description: "CRM",
    });
    expect(r.status, r.text).toBe(201);
    expect(r.json).toMatchObject({
      url: "https://hooks.example.com/alms",
      event_types: ["listing.created", "listing.cancelled"],
      description: "CRM",
      is_active: true,
    });
    const secret: string = r.json.signing_secret;
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const [row] = await db().select().from(webhookEndpoints).where(eq(webhookEndpoints.id, r.json.id)).all();
    expect(JSON.stringify(row)).not.toContain(secret.slice(6));
    const bound = { agencyId: row!.agencyId, boundId: row!.id };
    expect(await unseal(keyringOf(env), webhookSigningSecret, bound, row!.secretSealed)).toBe(secret);
    const list = await call("/api/v1/webhooks/endpoints", { key: t.key });
    expect(list.json.data.map((e: any) => e.id)).toEqual([r.json.id]);
    expect(list.text).not.toContain(secret.slice(6));
    const one = await call(`/api/v1/webhooks/endpoints/${r.json.id}`, { key: t.key });
    expect(one.json).not.toHaveProperty("signing_secret");
  });

  it("no table of D1 holds a signing secret in plaintext, the idempotency records included", async () => {
    const t = await makeTenant();
    const secrets: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await register(t, { url: `https://hooks.example.com/${i}` });
      expect(r.status, r.text).toBe(201);
      secrets.push(r.json.signing_secret);
    }
    const dump = await wholeDatabase();
    for (const secret of secrets) {
      expect(dump.includes(secret.slice("whsec_".length)), "the secret's random part appears in D1").toBe(false);
    }
  });

  it("omitted event_types means every active type", async () => {
    const t = await makeTenant();
    const r = await register(t, { url: "https://hooks.example.com/all" });
    expect(r.json.event_types, r.text).toBeNull();
  });

  it("an unknown or denied event type is named in a 422", async () => {
    const t = await makeTenant();
    const r = await register(t, {
      url: "https://hooks.example.com/x",
      event_types: ["listing.created", "listing.exploded", "api_key.rotated"],
    });
    expectError(r, 422, "webhook_event_type_not_allowed");
    expect(r.json.error.details).toEqual({ unknown: ["listing.exploded"], denied: ["api_key.rotated"] });
    expect(r.json.error.message).toContain("listing.exploded");
    expect((await call("/api/v1/webhooks/endpoints", { key: t.key })).json.data).toEqual([]);
  });

  it("refuses receivers that are not public https, as the deployed environments do", async () => {
    const t = await makeTenant();
    const deployed = { ...env, ALLOW_HTTP_RECEIVERS: "false" } as Env;
    for (const url of [
      "http://hooks.example.com/x",
      "https://localhost/x",
      "https://127.0.0.1/x",
      "https://2130706433/x",
      "https://0x7f000001/x",
      "https://[::1]/x",
      "https://169.254.169.254/latest",
      "https://metadata.google.internal/",
      "https://10.1.2.3/",
      "https://[::ffff:192.168.0.1]/",
    ]) {
      const ctx = createExecutionContext();
      const req = new Request(`${BASE}/api/v1/webhooks/endpoints`, {
        method: "POST",
        headers: { "X-API-Key": t.key, "Content-Type": "application/json", "X-Idempotency-Key": crypto.randomUUID() },
        body: JSON.stringify({ url }),
      });
      const res = await worker.fetch(req, deployed, ctx);
      await waitOnExecutionContext(ctx);
      const json = (await res.json()) as any;
      expect(res.status, `${url}: ${JSON.stringify(json)}`).toBe(422);
      expect(json.error.code).toBe("webhook_url_not_allowed");
    }
    expectError(await register(t, { url: "https://10.0.0.8/hook" }), 422, "webhook_url_not_allowed");
  });

  it("local development may register http://localhost receivers", async () => {
    const t = await makeTenant();
    expect((await register(t, { url: "http://localhost:9999/hook" })).status).toBe(201);
    expect(checkOutboundUrl("http://localhost:9999/hook", { allowLocalHttp: false }).ok).toBe(false);
  });

  it("lists in cursor pages, oldest first; a tampered cursor is request_query_invalid", async () => {
    const t = await makeTenant();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await register(t, { url: `https://hooks.example.com/page/${i}` })).json.id);
    const first = await call("/api/v1/webhooks/endpoints?limit=2", { key: t.key });
    expect(
      first.json.data.map((e: any) => e.id),
      first.text,
    ).toEqual(ids.slice(0, 2));
    expect(first.json.next_cursor).not.toBe("");
    expect(first.headers.get("X-Rate-Limit-Limit")).toBe("120");
    const second = await call(
      `/api/v1/webhooks/endpoints?limit=2&cursor=${encodeURIComponent(first.json.next_cursor)}`,
      { key: t.key },
    );
    expect(second.json, second.text).toEqual({ data: [expect.objectContaining({ id: ids[2] })], next_cursor: "" });
    const cursor: string = first.json.next_cursor;
    const tampered = cursor.slice(0, -2) + (cursor.at(-2) === "A" ? "B" : "A") + cursor.slice(-1);
    expect(tampered).not.toBe(cursor);
    expectError(
      await call(`/api/v1/webhooks/endpoints?cursor=${encodeURIComponent(tampered)}`, { key: t.key }),
      422,
      "request_query_invalid",
    );
    const other = await makeTenant();
    expectError(
      await call(`/api/v1/webhooks/endpoints?cursor=${encodeURIComponent(cursor)}`, { key: other.key }),
      422,
      "request_query_invalid",
    );
  });

  it("a repeated registration under the same idempotency key creates one endpoint and answers the same", async () => {
    const t = await makeTenant();
    const key = crypto.randomUUID();
    const body = { url: "https://hooks.example.com/once" };
    const first = await call("/api/v1/webhooks/endpoints", { key: t.key, body, idempotencyKey: key });
    expect(first.status, first.text).toBe(201);
    expect(first.headers.get("X-Rate-Limit-Limit")).toBe("60");
    const again = await call("/api/v1/webhooks/endpoints", { key: t.key, body, idempotencyKey: key });
    expect(again.status, again.text).toBe(201);
    expect(again.headers.get("X-Idempotent-Replay")).toBe("true");
    expect(again.json.id).toBe(first.json.id);
    expect((await call("/api/v1/webhooks/endpoints", { key: t.key })).json.data).toHaveLength(1);
    expectError(
      await call("/api/v1/webhooks/endpoints", {
        key: t.key,
        body: { url: "https://hooks.example.com/other" },
        idempotencyKey: key,
      }),
      409,
      "idempotency_key_conflict",
    );
  });

  it("managing endpoints needs webhooks:write; reading them needs webhooks:read", async () => {
    const readOnly = await makeTenant({ scopes: ["webhooks:read"] });
    expectError(await register(readOnly, { url: "https://hooks.example.com/x" }), 403, "auth.scope_denied");
    expect((await call("/api/v1/webhooks/endpoints", { key: readOnly.key })).status).toBe(200);
    const writeOnly = await makeTenant({ scopes: ["webhooks:write"] });
    expectError(await call("/api/v1/webhooks/endpoints", { key: writeOnly.key }), 403, "auth.scope_denied");
  });

  it("another agency's endpoint is webhook_endpoint_not_found; delete answers 204", async () => {
    const a = await makeTenant();
    const b = await makeTenant();
    const r = await register(a, { url: "https://hooks.example.com/a" });
    expectError(
      await call(`/api/v1/webhooks/endpoints/${r.json.id}`, { key: b.key }),
      404,
      "webhook_endpoint_not_found",
    );
    expectError(
      await call(`/api/v1/webhooks/endpoints/${r.json.id}`, { method: "DELETE", key: b.key }),
      404,
      "webhook_endpoint_not_found",
    );
    const del = await call(`/api/v1/webhooks/endpoints/${r.json.id}`, { method: "DELETE", key: a.key });
    expect(del.status).toBe(204);
    expectError(
      await call(`/api/v1/webhooks/endpoints/${r.json.id}`, { key: a.key }),
      404,
      "webhook_endpoint_not_found",
    );
  });
});

describe("signatures", () => {
  it(
    "a GitHub-style verifier from npm accepts our signature over the raw body, and rejects a " + "changed body",
    async () => {
      const secret = newSigningSecret();
      const body = JSON.stringify({
        event_id: "evt_1",
        event_type: "listing.created",
        api_version: "2026-11-01",
        timestamp: 1_790_000_000,
        nonce: "n1",
        data: { listing_number: "abc1234", status: "Coming Soon" },
      });
      const signature = await signPayload(secret, body);
      expect(signature).toMatch(/^sha256=[0-9a-f]{64}$/);
      expect(await verify(secret, body, signature)).toBe(true);
      expect(await verify(secret, body.replace("abc1234", "abc1235"), signature)).toBe(false);
      expect(await verify(newSigningSecret(), body, signature)).toBe(false);
    },
  );

  it(
    "the Standard Webhooks signature equals the standardwebhooks library's own for the same id, " + "time and body",
    async () => {
      const secret = newSigningSecret();
      const body = JSON.stringify({ event_id: "evt_1", timestamp: 1_790_000_000, data: { note: "é ✓" } });
      const ours = await standardSignature(secret, "evt_1", 1_790_000_000, body);
      expect(ours).toBe(new Webhook(secret).sign("evt_1", new Date(1_790_000_000_000), body));
      expect(ours).not.toBe(await standardSignature(secret, "evt_2", 1_790_000_000, body));
      expect(ours).not.toBe(await standardSignature(secret, "evt_1", 1_790_000_001, body));
    },
  );

  it("a secret that is not whsec_ + padded standard base64 signs X-Webhook-Signature alone", async () => {
    const attempt = { webhookId: "evt_1", timestamp: Math.floor(Date.now() / 1000), rawBody: "{}" };
    for (const secret of ["whsec_abc-_def", "whsec_", "whsec_QUJDRA", "whsec_QUJD RA==", "sk_QUJDRA=="]) {
      expect(Object.keys(await signatureHeaders(secret, attempt)), secret).toEqual(["X-Webhook-Signature"]);
    }
    for (const secret of ["whsec_QUJD", "whsec_QUJDRA==", "whsec_QUJDREU="]) {
      const headers = await signatureHeaders(secret, attempt);
      expect(new Webhook(secret).verify(attempt.rawBody, headers, { jsonParse: false }), secret).toBeUndefined();
    }
  });
});
