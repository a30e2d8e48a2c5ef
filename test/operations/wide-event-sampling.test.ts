import { describe, expect, it, vi } from "vitest";
import { DEFAULT_READ_SAMPLE_RATE, keepsWideEvent, SLOW_REQUEST_MS } from "../../src/http/wide-event";
import {
  forgetSampledTraces,
  newTrace,
  parseTraceparent,
  SAMPLED_TRACES_PER_MINUTE,
  withinSamplingBudget,
} from "../../src/lib/telemetry/trace";
import { captureInfoLogs, direct, expectError, keyed, makeTenant, usageDataset } from "../support/harness";

const SAMPLED = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const requestLines = (logs: Record<string, any>[]) => logs.filter((l) => l.message === "request");

describe("keepsWideEvent", () => {
  const ordinary = newTrace();
  const sampled = parseTraceparent(SAMPLED)!;
  const read = (status = 200, latencyMs = 5, trace = ordinary) => ({ method: "GET", status, latencyMs, trace });

  it("by default keeps one ordinary read in twenty, and the same when the rate is empty or not a rate", () => {
    expect(DEFAULT_READ_SAMPLE_RATE).toBe(0.05);
    for (const setting of [undefined, "", "abc", "2", "-0.5"]) {
      expect(
        keepsWideEvent(read(), setting, () => 0.04),
        String(setting),
      ).toBe(true);
      expect(
        keepsWideEvent(read(), setting, () => 0.05),
        String(setting),
      ).toBe(false);
    }
    expect(keepsWideEvent(read(), "1", () => 0.99)).toBe(true);
  });

  it("keeps every write, refusal, failure, slow request and sampled trace, whatever the rate", () => {
    for (const method of ["POST", "PUT", "PATCH", "DELETE"])
      for (const setting of [undefined, "0"])
        expect(
          keepsWideEvent({ ...read(201), method }, setting, () => 0.99),
          `${method} ${setting}`,
        ).toBe(true);
    expect(keepsWideEvent(read(), "0")).toBe(false);
    expect(keepsWideEvent(read(304), "0")).toBe(false);
    expect(keepsWideEvent({ ...read(), method: "HEAD" }, "0")).toBe(false);
    for (const status of [400, 401, 404, 409, 422, 429, 500, 503])
      expect(keepsWideEvent(read(status), "0"), String(status)).toBe(true);
    expect(keepsWideEvent(read(200, SLOW_REQUEST_MS), "0")).toBe(true);
    expect(keepsWideEvent(read(200, SLOW_REQUEST_MS - 1), "0")).toBe(false);
    expect(keepsWideEvent(read(200, 5, sampled), "0")).toBe(true);
  });

  it("keeps an ordinary read with the probability of the rate", () => {
    expect(keepsWideEvent(read(), "0.25", () => 0.2)).toBe(true);
    expect(keepsWideEvent(read(), "0.25", () => 0.25)).toBe(false);
    expect(keepsWideEvent(read(), "0.25", () => 0.9)).toBe(false);
  });
});

describe("WIDE_EVENT_SAMPLE_RATE", () => {
  it("at 0 a success writes its data point and no line; a refusal and a sampled trace write both", async () => {
    const t = await makeTenant();
    const { dataset, points } = usageDataset();
    const logs = captureInfoLogs();
    const bindings = { USAGE: dataset, WIDE_EVENT_SAMPLE_RATE: "0" };

    const read = await direct(keyed(`/api/v1/users/${t.owner.id}`, t.key), bindings);
    expect(read.status, read.text).toBe(200);
    const missing = await direct(keyed("/api/v1/users/usr_000000000nosuchuser", t.key), bindings);
    expectError(missing, 404, "user_not_found");
    const traced = await direct(
      keyed(`/api/v1/users/${t.owner.id}`, t.key, { headers: { traceparent: SAMPLED } }),
      bindings,
    );
    expect(traced.status, traced.text).toBe(200);

    expect(points.map((p) => p.doubles?.[2])).toEqual([200, 404, 200]);
    const lines = requestLines(logs);
    expect(lines.map((l) => l.request_id)).toEqual([
      missing.headers.get("X-Request-Id"),
      traced.headers.get("X-Request-Id"),
    ]);
    expect(lines[0]).toMatchObject({ status: 404, error_code: "user_not_found", agency_id: t.agencyId });
    expect(lines[1]).toMatchObject({ status: 200, trace_id: "4bf92f3577b34da6a3ce929d0e0e4736" });
  });

  it("honours a caller's sampled flag within a budget per minute, then records the trace as not sampled", async () => {
    forgetSampledTraces();
    const sampled = parseTraceparent(SAMPLED)!;
    const minute = Date.UTC(2026, 10, 27, 12, 0);
    const kept = Array.from({ length: SAMPLED_TRACES_PER_MINUTE + 5 }, () => withinSamplingBudget(sampled, minute));
    expect(kept.filter((tr) => tr.flags === "01")).toHaveLength(SAMPLED_TRACES_PER_MINUTE);
    expect(kept.at(-1)).toEqual({ ...sampled, flags: "00" });
    // An unsampled trace passes as it is and spends nothing; the next minute has a budget again.
    expect(withinSamplingBudget(newTrace(), minute).flags).toBe("00");
    expect(withinSamplingBudget(sampled, minute + 60_000).flags).toBe("01");

    // Through the Worker: at rate 0, a client sending the flag on every request gets at most the budget of lines.
    forgetSampledTraces();
    const t = await makeTenant();
    const logs = captureInfoLogs();
    const bindings = { USAGE: usageDataset().dataset, WIDE_EVENT_SAMPLE_RATE: "0" };
    for (let i = 0; i < SAMPLED_TRACES_PER_MINUTE + 10; i++) {
      const r = await direct(
        keyed(`/api/v1/users/${t.owner.id}`, t.key, { headers: { traceparent: SAMPLED } }),
        bindings,
      );
      expect(r.status, r.text).toBe(200);
    }
    // (A minute may turn during the loop: then up to twice the budget, never all of them.)
    const lines = requestLines(logs).length;
    expect(lines).toBeGreaterThanOrEqual(SAMPLED_TRACES_PER_MINUTE);
    expect(lines).toBeLessThan(SAMPLED_TRACES_PER_MINUTE + 10);
  });

  it("at its default, every write and every refusal keeps its line, a read one in twenty, and each its data point", async () => {
    const t = await makeTenant();
    const logs = captureInfoLogs();
    const { dataset, points } = usageDataset();
    const bindings = { USAGE: dataset, WIDE_EVENT_SAMPLE_RATE: "" };
    const draws = vi.spyOn(Math, "random").mockReturnValue(0.5);
    const read = await direct(keyed(`/api/v1/users/${t.owner.id}`, t.key), bindings);
    expect(read.status, read.text).toBe(200);
    const body = { address: "1 Default Rate Road", owner_user_id: t.owner.id, agent_one_id: t.agent.id };
    const headers = { "Content-Type": "application/json", "X-Idempotency-Key": "default-rate" };
    const write = await direct(
      keyed("/api/v1/listings", t.key, { method: "POST", headers, body: JSON.stringify(body) }),
      bindings,
    );
    expect(write.status, write.text).toBe(201);
    const refused = await direct(keyed("/api/v1/users/usr_000000000nosuchuser", t.key), bindings);
    expect(refused.status).toBe(404);
    draws.mockReturnValue(0.01);
    const lucky = await direct(keyed(`/api/v1/users/${t.owner.id}`, t.key), bindings);
    expect(lucky.status).toBe(200);
    draws.mockRestore();
    expect(points.map((p) => p.doubles?.[2])).toEqual([200, 201, 404, 200]);
    expect(requestLines(logs).map((l) => l.request_id)).toEqual(
      [write, refused, lucky].map((r) => r.headers.get("X-Request-Id")),
    );
  });
});
