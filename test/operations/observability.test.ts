import { createExecutionContext, createMessageBatch, getQueueResult, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import worker from "../../src/index";
import { continueTrace, parseTraceparent } from "../../src/lib/telemetry/trace";
import {
  BASE,
  call,
  captureInfoLogs,
  direct,
  expectError,
  keyed,
  makePlatformKey,
  makeTenant,
  type Tenant,
  unique,
  usageDataset,
} from "../support/harness";
import {
  cron,
  interceptWebhooks,
  type Receivers,
  registerEndpoint,
  settle,
  WEBHOOK_QUEUE,
} from "../support/webhook-harness";

const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const SAMPLED = `00-${TRACE_ID}-00f067aa0ba902b7-01`;
const HEX32 = /^[0-9a-f]{32}$/;

const createListing = (t: Tenant, headers: Record<string, string> = {}, body?: unknown) =>
  keyed("/api/v1/listings", t.key, {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-Idempotency-Key": crypto.randomUUID(), ...headers },
    body: JSON.stringify(
      body ?? { address: `${unique("addr")} Trace Lane`, owner_user_id: t.owner.id, agent_one_id: t.agent.id },
    ),
  });

const wideEvent = (logs: Record<string, any>[], requestId: string | null) =>
  logs.find((l) => l.message === "request" && l.request_id === requestId);

describe("W3C trace context", () => {
  it("accepts a valid traceparent and refuses malformed ones", () => {
    expect(parseTraceparent(SAMPLED)).toEqual({ traceId: TRACE_ID, spanId: "00f067aa0ba902b7", flags: "01" });
    // A later version may append fields; version 00 may not.
    expect(parseTraceparent(`01-${TRACE_ID}-00f067aa0ba902b7-01-extra`)?.traceId).toBe(TRACE_ID);
    for (const bad of [
      `00-${TRACE_ID}-00f067aa0ba902b7-01-extra`,
      `ff-${TRACE_ID}-00f067aa0ba902b7-01`,
      `00-${"0".repeat(32)}-00f067aa0ba902b7-01`,
      `00-${TRACE_ID}-${"0".repeat(16)}-01`,
      `00-${TRACE_ID.toUpperCase()}-00f067aa0ba902b7-01`,
      `00-${TRACE_ID}-00f067aa0ba902b7`,
      "",
      undefined,
    ])
      expect(parseTraceparent(bad), String(bad)).toBeUndefined();
    const started = continueTrace("garbage");
    expect(started.traceId).toMatch(HEX32);
    expect(started.flags).toBe("00");
    const continued = continueTrace(SAMPLED);
    expect(continued.traceId).toBe(TRACE_ID);
    expect(continued.spanId).not.toBe("00f067aa0ba902b7");
  });

  it("answers X-Trace-Id: the caller's trace, or a new one when traceparent is absent or invalid", async () => {
    const t = await makeTenant();
    const traced = await call("/api/v1/users", { key: t.key, headers: { traceparent: SAMPLED } });
    expect(traced.status, traced.text).toBe(200);
    expect(traced.headers.get("X-Trace-Id")).toBe(TRACE_ID);
    const invalid = await call("/api/v1/users", { key: t.key, headers: { traceparent: `00-${TRACE_ID}-zz-01` } });
    expect(invalid.headers.get("X-Trace-Id")).toMatch(HEX32);
    expect(invalid.headers.get("X-Trace-Id")).not.toBe(TRACE_ID);
    const none = await call("/api/v1/nothing-here");
    expectError(none, 404, "request_path_not_found");
    expect(none.headers.get("X-Trace-Id")).toMatch(HEX32);
  });

  it("gives answers made outside the handler's context this request's ids: a replay, an asset", async () => {
    const t = await makeTenant();
    const other = `00-${"ab".repeat(16)}-00f067aa0ba902b7-01`;
    const body = { address: `${unique("addr")} Replay Lane`, owner_user_id: t.owner.id, agent_one_id: t.agent.id };
    const first = await call("/api/v1/listings", {
      key: t.key,
      body,
      idempotencyKey: "replayed",
      headers: { traceparent: SAMPLED },
    });
    const again = await call("/api/v1/listings", {
      key: t.key,
      body,
      idempotencyKey: "replayed",
      headers: { traceparent: other },
    });
    expect(again.headers.get("X-Idempotent-Replay"), again.text).toBe("true");
    expect(again.headers.get("X-Trace-Id")).toBe("ab".repeat(16));
    expect(again.headers.get("X-Request-Id")).toMatch(/^req_/);
    expect(again.headers.get("X-Request-Id")).not.toBe(first.headers.get("X-Request-Id"));
    const script = await call("/api/v1/docs/reference.js", { headers: { traceparent: SAMPLED } });
    expect(script.status).toBe(200);
    expect(script.headers.get("X-Trace-Id")).toBe(TRACE_ID);
    expect(script.headers.get("X-Request-Id")).toMatch(/^req_/);
  });

  describe("end to end", () => {
    let receivers: Receivers;
    beforeEach(() => {
      receivers = interceptWebhooks();
    });
    afterEach(() => vi.restoreAllMocks());

    it("one trace id joins the write's wide event, the gate's and ledger's lines, the queue message and the delivery", async () => {
      const t = await makeTenant();
      await registerEndpoint(t, "https://hooks.example.com/traced");
      await settle();
      receivers.sent.length = 0;
      const logs = captureInfoLogs();

      const r = await direct(createListing(t, { traceparent: SAMPLED }));
      expect(r.status, r.text).toBe(201);
      expect(r.headers.get("X-Trace-Id")).toBe(TRACE_ID);
      expect(wideEvent(logs, r.headers.get("X-Request-Id"))).toMatchObject({ trace_id: TRACE_ID, status: 201 });
      const traced = (message: string) => logs.filter((l) => l.message === message && l.trace_id === TRACE_ID);
      expect(traced("key gate admit"), JSON.stringify(logs)).toEqual([
        expect.objectContaining({ key_id: t.keyId, admitted: true, endpoint: "create_listing" }),
      ]);
      expect(traced("idempotency ledger begin")).toEqual([
        expect.objectContaining({ agency_id: t.agencyId, state: "acquired" }),
      ]);
      expect(traced("idempotency ledger complete")).toEqual([expect.objectContaining({ status: 201 })]);
      // Each hop has a span of its own.
      const spans = [...traced("key gate admit"), ...traced("idempotency ledger begin")].map((l) => l.span_id);
      expect(new Set([...spans, "00f067aa0ba902b7"]).size).toBe(3);

      await settle();
      const message = receivers.sent.find(
        (m) => parseTraceparent((m as { traceparent?: string }).traceparent)?.traceId === TRACE_ID,
      ) as { delivery_id: string; traceparent: string } | undefined;
      expect(message, JSON.stringify(receivers.sent)).toBeDefined();

      const { dataset, points } = usageDataset();
      const batch = createMessageBatch(WEBHOOK_QUEUE, [
        { id: "m0", timestamp: new Date(), attempts: 1, body: message! },
      ]);
      const ctx = createExecutionContext();
      await worker.queue(batch, { ...env, USAGE: dataset }, ctx);
      await waitOnExecutionContext(ctx);
      expect((await getQueueResult(batch, ctx)).explicitAcks).toEqual(["m0"]);
      const delivered = receivers.received.find((d) => d.url === "https://hooks.example.com/traced");
      const header = parseTraceparent(delivered?.headers.get("traceparent"));
      expect(header?.traceId).toBe(TRACE_ID);
      expect(header?.spanId).not.toBe(parseTraceparent(message!.traceparent)?.spanId);
      expect(points).toEqual([
        {
          indexes: [t.agencyId],
          blobs: [
            "delivery",
            t.agencyId,
            expect.stringMatching(/^we_/),
            "listing.created",
            "delivered",
            "2xx",
            "local",
          ],
          doubles: [expect.any(Number), 1, 200],
        },
      ]);
      expect(logs).toContainEqual(
        expect.objectContaining({ message: "run", job: "queue", queue: WEBHOOK_QUEUE, messages: 1, outcome: "ok" }),
      );
    });

    it("a delivery whose message carries no trace (sent before traces were kept) uses its event's", async () => {
      const t = await makeTenant();
      await registerEndpoint(t, "https://hooks.example.com/old");
      await settle();
      receivers.sent.length = 0;
      const r = await direct(createListing(t, { traceparent: SAMPLED }));
      expect(r.status, r.text).toBe(201);
      await settle();
      const message = receivers.sent.find((m) => (m as { traceparent?: string }).traceparent?.includes(TRACE_ID));
      expect(message, JSON.stringify(receivers.sent)).toBeDefined();
      const batch = createMessageBatch(WEBHOOK_QUEUE, [
        { id: "m0", timestamp: new Date(), attempts: 1, body: { delivery_id: message!.delivery_id } },
      ]);
      const ctx = createExecutionContext();
      await worker.queue(batch, env, ctx);
      await waitOnExecutionContext(ctx);
      const delivered = receivers.received.find((d) => d.url === "https://hooks.example.com/old");
      expect(parseTraceparent(delivered?.headers.get("traceparent"))?.traceId).toBe(TRACE_ID);
    });
  });
});

describe("the wide event and the data point of a request", () => {
  async function setBudget(t: Tenant, overrides: Record<string, number>) {
    const admin = await makePlatformKey(t.agencyId, { scopes: ["admin"] });
    const r = await call(`/api/v1/admin/api-keys/${t.keyId}/rate-limits`, {
      method: "PATCH",
      key: admin.key,
      body: { overrides },
    });
    expect(r.status, r.text).toBe(200);
  }

  const common = (t: Tenant) => ({
    trace_id: expect.stringMatching(HEX32),
    environment: "local",
    mode: "test",
    agency_id: t.agencyId,
    key_id: t.keyId,
    latency_ms: expect.any(Number),
    gate_ms: expect.any(Number),
    ledger_ms: expect.any(Number),
    d1_ms: expect.any(Number),
  });

  it("a success, a validation error, a replay and a 429, each with its fields and its point", async () => {
    const t = await makeTenant();
    await setBudget(t, { create_listing: 3 });
    const { dataset, points } = usageDataset();
    const logs = captureInfoLogs();
    const body = { address: `${unique("addr")} Event Street`, owner_user_id: t.owner.id, agent_one_id: t.agent.id };
    const bytes = new TextEncoder().encode(JSON.stringify(body)).byteLength;

    const created = await direct(createListing(t, { "X-Idempotency-Key": "wide-1" }, body), { USAGE: dataset });
    expect(created.status, created.text).toBe(201);
    const invalid = await direct(createListing(t, {}, { ...body, address: 42 }), { USAGE: dataset });
    expectError(invalid, 422, "validation_type_mismatch");
    const replayed = await direct(createListing(t, { "X-Idempotency-Key": "wide-1" }, body), { USAGE: dataset });
    expect(replayed.headers.get("X-Idempotent-Replay")).toBe("true");
    const limited = await direct(createListing(t, {}, body), { USAGE: dataset });
    expectError(limited, 429, "rate_limit_exceeded");

    const secret = t.key;
    expect(JSON.stringify(logs)).not.toContain(secret);
    expect(wideEvent(logs, created.headers.get("X-Request-Id"))).toEqual({
      level: "info",
      message: "request",
      request_id: created.headers.get("X-Request-Id"),
      ...common(t),
      route: "createListing",
      method: "POST",
      status: 201,
      error_code: null,
      idempotency: "new",
      rate_remaining: 2,
      body_bytes: bytes,
    });
    const createdEvent = wideEvent(logs, created.headers.get("X-Request-Id"))!;
    expect(createdEvent.gate_ms + createdEvent.ledger_ms + createdEvent.d1_ms).toBeLessThanOrEqual(
      createdEvent.latency_ms,
    );
    expect(wideEvent(logs, invalid.headers.get("X-Request-Id"))).toMatchObject({
      ...common(t),
      route: "createListing",
      status: 422,
      error_code: "validation_type_mismatch",
      idempotency: "new",
      rate_remaining: 1,
    });
    expect(wideEvent(logs, replayed.headers.get("X-Request-Id"))).toMatchObject({
      ...common(t),
      route: "createListing",
      status: 201,
      error_code: null,
      idempotency: "replay",
      rate_remaining: 0,
      body_bytes: bytes,
    });
    expect(wideEvent(logs, limited.headers.get("X-Request-Id"))).toMatchObject({
      ...common(t),
      route: "createListing",
      status: 429,
      error_code: "rate_limit_exceeded",
      idempotency: null,
      rate_remaining: 0,
    });

    const point = (status: number, code: string, body: number) => ({
      indexes: [t.agencyId],
      blobs: ["request", t.agencyId, t.keyId, "createListing", `${Math.floor(status / 100)}xx`, code, "local"],
      doubles: [expect.any(Number), body, status],
    });
    expect(points).toEqual([
      point(201, "", bytes),
      point(422, "validation_type_mismatch", expect.any(Number)),
      point(201, "", bytes),
      point(429, "rate_limit_exceeded", bytes),
    ]);
  });

  it("a request no key was found for still writes its event, without agency or key", async () => {
    const { dataset, points } = usageDataset();
    const logs = captureInfoLogs();
    const r = await direct(new Request(`${BASE}/api/v1/users`), { USAGE: dataset });
    expectError(r, 401, "api_key_missing");
    expect(wideEvent(logs, r.headers.get("X-Request-Id"))).toMatchObject({
      route: "listUsers",
      status: 401,
      error_code: "api_key_missing",
      agency_id: null,
      key_id: null,
    });
    expect(points).toEqual([
      {
        indexes: [""],
        blobs: ["request", "", "", "listUsers", "4xx", "api_key_missing", "local"],
        doubles: [expect.any(Number), 0, 401],
      },
    ]);
  });
});

describe("background work", () => {
  it("a Cron run writes one event with its trace and outcome", async () => {
    const logs = captureInfoLogs();
    await cron("*/15 * * * *");
    const runs = logs.filter((l) => l.message === "run" && l.job === "cron");
    expect(runs).toEqual([
      expect.objectContaining({
        cron: "*/15 * * * *",
        outcome: "ok",
        environment: "local",
        trace_id: expect.stringMatching(HEX32),
      }),
    ]);
  });
});
