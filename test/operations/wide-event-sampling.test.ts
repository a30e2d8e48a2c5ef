import { describe, expect, it } from "vitest";
import { keepsWideEvent, SLOW_REQUEST_MS } from "../../src/http/wide-event";
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

  it("keeps every request when the rate is unset, empty, 1 or not a rate", () => {
    for (const setting of [undefined, "", "1", "abc", "2", "-0.5"])
      expect(
        keepsWideEvent(200, 5, ordinary, setting, () => 0.99),
        String(setting),
      ).toBe(true);
  });

  it("at rate 0 drops an ordinary request but keeps refusals, failures, slow requests and sampled traces", () => {
    expect(keepsWideEvent(200, 5, ordinary, "0")).toBe(false);
    expect(keepsWideEvent(304, 5, ordinary, "0")).toBe(false);
    for (const status of [400, 401, 404, 409, 422, 429, 500, 503])
      expect(keepsWideEvent(status, 5, ordinary, "0"), String(status)).toBe(true);
    expect(keepsWideEvent(201, SLOW_REQUEST_MS, ordinary, "0")).toBe(true);
    expect(keepsWideEvent(201, SLOW_REQUEST_MS - 1, ordinary, "0")).toBe(false);
    expect(keepsWideEvent(201, 5, sampled, "0")).toBe(true);
  });

  it("keeps an ordinary request with the probability of the rate", () => {
    expect(keepsWideEvent(200, 5, ordinary, "0.25", () => 0.2)).toBe(true);
    expect(keepsWideEvent(200, 5, ordinary, "0.25", () => 0.25)).toBe(false);
    expect(keepsWideEvent(200, 5, ordinary, "0.25", () => 0.9)).toBe(false);
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

  it("unset, every request writes its line", async () => {
    const t = await makeTenant();
    const logs = captureInfoLogs();
    const { dataset } = usageDataset();
    const read = await direct(keyed(`/api/v1/users/${t.owner.id}`, t.key), { USAGE: dataset });
    expect(read.status, read.text).toBe(200);
    expect(requestLines(logs).map((l) => l.request_id)).toEqual([read.headers.get("X-Request-Id")]);
  });
});
