import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { verify } from "@octokit/webhooks-methods";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { env, READY_MS, root, startDev, started, stop } from "./dev-server";

/** `ops listen` and `ops trigger` against a real `npm run dev` (see dev-server.ts). */
interface Received {
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

let state: string;
let dev: Awaited<ReturnType<typeof startDev>>["dev"] | undefined;
let listener: ReturnType<typeof started> | undefined;
let receiver: Server;
const received: Received[] = [];
let origin: string;
let key: string;
let hook: string;

beforeAll(async () => {
  receiver = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (chunk) => {
      body += chunk;
    });
    req.on("end", () => {
      received.push({ url: req.url ?? "", headers: req.headers, body });
      res.writeHead(200).end("ok");
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/webhooks`;

  state = mkdtempSync(join(tmpdir(), "alms-cli-"));
  const running = await startDev(state);
  dev = running.dev;
  origin = running.origin;
  key = running.key;
}, READY_MS + 100_000);

afterAll(async () => {
  await stop(listener?.child);
  await stop(dev?.child);
  await new Promise((resolve) => receiver?.close(resolve));
  if (state) rmSync(state, { recursive: true, force: true });
}, 60_000);

const ops = (args: string[]) =>
  new Promise<{ code: number | null; output: string }>((resolve) => {
    execFile(
      process.execPath,
      ["scripts/ops.ts", ...args],
      { cwd: root, env: { ...env, ALMS_URL: origin }, timeout: 90_000 },
      (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, output: `${stdout}${stderr}` }),
    );
  });

describe("ops listen and ops trigger against npm run dev", () => {
  it("forwards triggered events to a local receiver, signed as documented, and stops cleanly on ^C", async () => {
    listener = started(
      process.execPath,
      ["scripts/ops.ts", "listen", "--forward-to", hook, "--key", key, "--interval", "0.5"],
      { ALMS_URL: origin },
    );
    const secret = (await listener.waitFor(/signing secret is (whsec_[A-Za-z0-9+/=]+)/, 30_000))[1]!;

    const triggered: Record<string, string> = {};
    for (const type of ["listing.created", "invoice.payment_made"]) {
      const r = await ops(["trigger", type, "--key", key]);
      expect(r.code, r.output).toBe(0);
      triggered[type] = r.output.match(new RegExp(`Triggered ${type.replace(".", "\\.")}: (evt_\\w+)`))![1]!;
    }

    const deliveryOf = (eventId: string) => received.find((r) => r.headers["x-webhook-id"] === eventId);
    const deadline = Date.now() + 30_000;
    while (Object.values(triggered).some((id) => !deliveryOf(id)) && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 250));

    for (const [type, eventId] of Object.entries(triggered)) {
      const delivery = deliveryOf(eventId);
      expect(
        delivery,
        `${type} ${eventId} never reached the receiver; listen said:\n${listener.output()}`,
      ).toBeDefined();
      const signature = delivery!.headers["x-webhook-signature"] as string;
      expect(signature).toMatch(/^sha256=[0-9a-f]{64}$/);
      // GitHub's verifier: HMAC-SHA256 of the raw body, keyed with the whole secret.
      expect(await verify(secret, delivery!.body, signature), "signature of the raw body").toBe(true);
      expect(await verify(`${secret}x`, delivery!.body, signature), "another secret does not verify").toBe(false);
      // The Standard Webhooks verifier: webhook-id, webhook-timestamp and webhook-signature, as a real delivery has.
      const headers = delivery!.headers as Record<string, string>;
      expect(headers["webhook-id"], "webhook-id is the event's id").toBe(eventId);
      expect(new Webhook(secret).verify(delivery!.body, headers)).toMatchObject({ event_id: eventId });
      expect(() => new Webhook(secret).verify(`${delivery!.body} `, headers)).toThrow(/No matching signature/);
      const envelope = JSON.parse(delivery!.body);
      // Exactly a real delivery's envelope: the agency's sequence and the resource included.
      expect(Object.keys(envelope)).toEqual([
        "event_id",
        "event_type",
        "api_version",
        "timestamp",
        "nonce",
        "sequence",
        "resource",
        "data",
      ]);
      const listed = await fetch(`${origin}/api/v1/events/${eventId}`, { headers: { "X-API-Key": key } });
      const stored = (await listed.json()) as { sequence: number; resource: unknown };
      expect(envelope.sequence).toBe(stored.sequence);
      expect(envelope.resource).toEqual(stored.resource);
      expect(headers.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/);
      expect(envelope).toMatchObject({ event_id: eventId, event_type: type });
      expect(headers["webhook-timestamp"]).toBe(String(envelope.timestamp));
      expect(Math.abs(envelope.timestamp - Date.now() / 1000)).toBeLessThan(300);
      expect(delivery!.headers["x-webhook-event"]).toBe(type);
      expect(delivery!.headers["x-webhook-delivery"]).toMatch(/^whd_/);
      expect(delivery!.headers["content-type"]).toBe("application/json");
      // The listener prints its line once the receiver's answer is back, just after the receiver saw the request.
      await listener.waitFor(new RegExp(`\\S+Z ${type.replace(".", "\\.")} ${eventId} → 200`), 10_000);
    }
    const listing = JSON.parse(deliveryOf(triggered["listing.created"]!)!.body);
    expect(listing.data).toMatchObject({ status: "Coming Soon" });
    expect(new Set(received.map((r) => JSON.parse(r.body).nonce)).size, "a nonce per delivery").toBe(received.length);

    process.kill(-listener.child.pid!, "SIGINT");
    expect(await Promise.race([listener.exited, new Promise((r) => setTimeout(() => r("hung"), 10_000))])).toBe(0);
    expect(listener.output()).toContain("Stopped.");
  }, 240_000);

  it("replays from a sequence, thin and filtered, then stops", async () => {
    const api = (path: string, body?: unknown) =>
      fetch(`${origin}${path}`, {
        method: body ? "POST" : "GET",
        headers: {
          "X-API-Key": key,
          ...(body ? { "X-Idempotency-Key": crypto.randomUUID(), "Content-Type": "application/json" } : {}),
        },
        body: body ? JSON.stringify(body) : undefined,
      }).then(async (r) => ({ status: r.status, json: (await r.json()) as any }));
    const users = (await api("/api/v1/users?limit=100")).json.data as { id: string; role: string }[];
    const owner = users.find((u) => u.role === "media_agency" || u.role === "broker")!;
    const agent = users.find((u) => u.role === "agent")!;
    const wanted = `${crypto.randomUUID()} Replay Street`;
    for (const address of [wanted, `${crypto.randomUUID()} Other Street`]) {
      const made = await api("/api/v1/listings", { address, owner_user_id: owner.id, agent_one_id: agent.id });
      expect(made.status, JSON.stringify(made.json)).toBe(201);
    }
    const args = ["--after-sequence", "0", "--events", "listing.created", "--payload", "thin", "--interval", "0.5"];
    const thin = started(
      process.execPath,
      [
        "scripts/ops.ts",
        "listen",
        "--forward-to",
        `${hook}/thin`,
        "--key",
        key,
        ...args,
        "--filter",
        `data.address=${wanted}`,
      ],
      { ALMS_URL: origin },
    );
    try {
      const secret = (await thin.waitFor(/signing secret is (whsec_[A-Za-z0-9+/=]+)/, 30_000))[1]!;
      const line = await thin.waitFor(/listing\.created (evt_\w+) → 200 \(replay\)/, 30_000);
      await thin.waitFor(/listing\.created evt_\w+ → filtered \(replay\)/, 30_000);
      const got = received.filter((r) => r.url === "/webhooks/thin");
      expect(got, thin.output()).toHaveLength(1);
      const envelope = new Webhook(secret).verify(got[0]!.body, got[0]!.headers as Record<string, string>) as {
        event_id: string;
      };
      expect(envelope.event_id).toBe(line[1]);
      expect(envelope).not.toHaveProperty("data");
      expect(envelope).toHaveProperty("resource");
      expect(got[0]!.headers["x-webhook-replay"]).toBe("listen");
    } finally {
      process.kill(-thin.child.pid!, "SIGINT");
      await thin.exited;
    }
  }, 120_000);

  it("ops request shows what a write did, and names an unknown request", async () => {
    const write = await fetch(`${origin}/api/v1/webhooks/endpoints`, {
      method: "POST",
      headers: { "X-API-Key": key, "X-Idempotency-Key": crypto.randomUUID(), "Content-Type": "application/json" },
      body: JSON.stringify({ url: "https://hooks.example.com/ops-request" }),
    });
    expect(write.status, await write.clone().text()).toBe(201);
    const endpointId = ((await write.json()) as { id: string }).id;
    const requestId = write.headers.get("X-Request-Id")!;
    const shown = await ops(["request", requestId]);
    expect(shown.code, shown.output).toBe(0);
    expect(JSON.parse(shown.output)).toMatchObject({
      request_id: requestId,
      operation_id: "createWebhookEndpoint",
      method: "POST",
      path: "/api/v1/webhooks/endpoints",
      status: 201,
      resource: { type: "webhook_endpoint", id: endpointId },
      events: [],
    });
    const unknown = await ops(["request", "req_unknown"]);
    expect(unknown.code, unknown.output).toBe(1);
    expect(unknown.output).toContain("request_not_found");
  }, 60_000);

  it("refuses a trigger without a key, and an unknown event type", async () => {
    const noKey = await ops(["trigger", "listing.created"]);
    expect(noKey.code, noKey.output).toBe(2);
    expect(noKey.output).toContain("No key");
    const unknown = await ops(["trigger", "listing.exploded", "--key", key]);
    expect(unknown.code, unknown.output).toBe(2);
    expect(unknown.output).toContain("Unknown event type 'listing.exploded'");
  }, 60_000);
});
