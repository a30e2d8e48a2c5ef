import { describe, expect, it } from "vitest";
import { captureInfoLogs, direct, keyed, makeTenant, unique, usageDataset } from "../support/harness";

const SAMPLED = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

const create = (key: string, ownerId: string, agentId: string) =>
  keyed("/api/v1/listings", key, {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-Idempotency-Key": crypto.randomUUID(), traceparent: SAMPLED },
    body: JSON.stringify({ address: `${unique("addr")} Switch Road`, owner_user_id: ownerId, agent_one_id: agentId }),
  });

describe("the OBSERVABILITY switch", () => {
  for (const setting of [undefined, "on"])
    it(`${setting ?? "unset"}: a GET and a write each leave a wide event and a data point`, async () => {
      const t = await makeTenant();
      const { dataset, points } = usageDataset();
      const logs = captureInfoLogs();
      // Every line kept, so the read's shows too (its default sampling is wide-event-sampling.test.ts's).
      const bindings = { USAGE: dataset, WIDE_EVENT_SAMPLE_RATE: "1", ...(setting ? { OBSERVABILITY: setting } : {}) };
      const read = await direct(keyed("/api/v1/users", t.key), bindings);
      expect(read.status, read.text).toBe(200);
      const written = await direct(create(t.key, t.owner.id, t.agent.id), bindings);
      expect(written.status, written.text).toBe(201);
      expect(written.headers.get("X-Trace-Id")).toBe("4bf92f3577b34da6a3ce929d0e0e4736");
      const ids = [read.headers.get("X-Request-Id"), written.headers.get("X-Request-Id")];
      expect(logs.filter((l) => l.message === "request").map((l) => l.request_id)).toEqual(ids);
      expect(logs.some((l) => l.message === "idempotency ledger begin")).toBe(true);
      expect(points.map((p) => p.blobs?.[3])).toEqual(["listUsers", "createListing"]);
    });

  it("off: no wide event, no data point, no trace header and no traced hop", async () => {
    const t = await makeTenant();
    const { dataset, points } = usageDataset();
    const logs = captureInfoLogs();
    const bindings = { USAGE: dataset, OBSERVABILITY: "off" };
    const read = await direct(keyed("/api/v1/users", t.key), bindings);
    expect(read.status, read.text).toBe(200);
    const written = await direct(create(t.key, t.owner.id, t.agent.id), bindings);
    expect(written.status, written.text).toBe(201);
    for (const r of [read, written]) {
      expect(r.headers.get("X-Request-Id")).toMatch(/^req_/);
      expect(r.headers.get("X-Trace-Id")).toBeNull();
    }
    // Even a sampled traceparent reaches neither the gate nor the ledger; background runs keep their line.
    expect(logs.filter((l) => l.message !== "run")).toEqual([]);
    expect(logs.filter((l) => l.message === "run").every((l) => l.job === "outbox_drain")).toBe(true);
    expect(points).toEqual([]);
  });
});
