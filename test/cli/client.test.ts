import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// The built package, as `npm install ./clients/typescript` gives it (`npm run types:client` builds it).
import {
  AlmsError,
  type Client,
  createClient,
  verifyWebhook,
  WebhookVerificationError,
} from "../../clients/typescript/dist/index.js";
import { env, READY_MS, root, startDev, stop } from "./dev-server";

/** The official client against a real `npm run dev` (see dev-server.ts). */
let state: string;
let project: string | undefined;
let dev: Awaited<ReturnType<typeof startDev>>["dev"] | undefined;
let client: Client;
let origin: string;
let apiKey: string;
let receiver: Server;
let hookUrl: string;
const received: { headers: IncomingHttpHeaders; body: string }[] = [];

beforeAll(async () => {
  receiver = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (chunk) => {
      body += chunk;
    });
    req.on("end", () => {
      received.push({ headers: req.headers, body });
      res.writeHead(200).end("ok");
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
  state = mkdtempSync(join(tmpdir(), "alms-client-"));
  const running = await startDev(state);
  dev = running.dev;
  origin = running.origin;
  apiKey = running.key;
  client = createClient({ baseUrl: origin, apiKey });
}, READY_MS + 60_000);

afterAll(async () => {
  await stop(dev?.child);
  await new Promise((resolve) => receiver?.close(resolve));
  if (state) rmSync(state, { recursive: true, force: true });
  if (project) rmSync(project, { recursive: true, force: true });
}, 60_000);

const run = (command: string, args: string[], cwd: string, extraEnv: Record<string, string> = {}) =>
  new Promise<{ code: number | null; output: string }>((resolve) => {
    execFile(command, args, { cwd, env: { ...env, ...extraEnv }, timeout: 90_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, output: `${stdout}${stderr}` }),
    );
  });

/** The code block of docs/client.md under "The first five calls". */
function firstFiveCalls(): string {
  const guide = readFileSync(join(root, "docs", "client.md"), "utf8");
  const section = guide.slice(guide.indexOf("## The first five calls"));
  const block = /```ts\n([\s\S]*?)```/.exec(section);
  if (!block) throw new Error("docs/client.md has no ts block under its first five calls");
  return block[1]!;
}

async function rejection(promise: Promise<unknown>) {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error, "the call should have failed").toBeInstanceOf(AlmsError);
  return error as AlmsError;
}

describe("the official TypeScript client against npm run dev", () => {
  it("creates listings, pages them, uploads a file, verifies a webhook and reports errors", async () => {
    // Who the key is, typed from the document.
    const me = await client.get("/api/v1/me");
    expect(me.mode).toBe("test");
    expect(me.key_id).toMatch(/^key_/);
    const users = [];
    for await (const user of client.paginate("/api/v1/users", { query: { limit: 2 } })) users.push(user);
    const owner = users.find((u) => u.role === "media_agency")!;
    const agent = users.find((u) => u.role === "agent")!;
    expect(owner && agent, JSON.stringify(users)).toBeTruthy();

    const hook = await client.post("/api/v1/webhooks/endpoints", {
      body: { url: hookUrl, event_types: ["listing.created"] },
    });
    expect(hook.signing_secret).toMatch(/^whsec_/);

    const created: string[] = [];
    for (const n of [1, 2, 3]) {
      const listing = await client.post("/api/v1/listings", {
        body: { address: `${n} Client Lane`, owner_user_id: owner.id, agent_one_id: agent.id },
      });
      expect(listing).toMatchObject({ status: "Coming Soon", is_activated: false });
      created.push(listing.listing_number);
    }
    const listed: string[] = [];
    for await (const listing of client.paginate("/api/v1/listings", { query: { limit: 2 } }))
      listed.push(listing.listing_number);
    expect(listed).toEqual(expect.arrayContaining(created));
    expect(new Set(listed).size, "no listing twice").toBe(listed.length);

    // The same idempotency key answers the first response again.
    const again = await client.send("post", "/api/v1/listings", {
      body: { address: "4 Client Lane", owner_user_id: owner.id, agent_one_id: agent.id },
      idempotencyKey: "client-scenario-replay",
    });
    const replay = await client.send("post", "/api/v1/listings", {
      body: { address: "4 Client Lane", owner_user_id: owner.id, agent_one_id: agent.id },
      idempotencyKey: "client-scenario-replay",
    });
    expect(replay.data).toEqual(again.data);
    expect(replay.response.headers.get("X-Idempotent-Replay")).toBe("true");

    const bytes = new TextEncoder().encode("not really a jpeg, but the right size");
    const upload = await client.post("/api/v1/media/upload", {
      body: {
        asset_type: "photo",
        content_type: "image/jpeg",
        size_bytes: bytes.length,
        listing_number: created[0],
        filename: "front.jpg",
      },
    });
    // A small file is one PUT; above 100 MiB the answer describes parts instead (url is then null).
    if (!upload.url) throw new Error(`a small upload got no PUT URL: ${JSON.stringify(upload)}`);
    const put = await fetch(upload.url, { method: upload.method, headers: upload.headers ?? {}, body: bytes });
    expect(put.status, await put.clone().text()).toBeLessThan(300);
    const stored = await client.get("/api/v1/media/uploads/{upload_id}", { path: { upload_id: upload.upload_id } });
    expect(stored, JSON.stringify(stored)).toMatchObject({ status: "stored", stored_bytes: bytes.length });

    const missing = await rejection(
      client.get("/api/v1/listings/{listing_number}", { path: { listing_number: "zzzzzzz" } }),
    );
    expect(missing).toMatchObject({ status: 404, code: "listing_not_found", attempts: 1 });
    expect(missing.doc_url).toMatch(/\/api\/v1\/docs\/errors#listing_not_found$/);
    expect(missing.request_id).toMatch(/\S/);
    const unknown = await rejection(
      client.post("/api/v1/listings", {
        body: {
          address: "5 Client Lane",
          owner_user_id: owner.id,
          agent_one_id: agent.id,
          agent_two: agent.id,
        } as never,
      }),
    );
    expect(unknown).toMatchObject({ status: 422, code: "validation_unknown_field" });
    expect(JSON.stringify(unknown.details), "did_you_mean names the field").toContain("agent_two_id");

    const deadline = Date.now() + 30_000;
    const deliveryOf = (n: string) =>
      received.find((r) => r.body.includes('"listing.created"') && JSON.parse(r.body).data.listing_number === n);
    while (!deliveryOf(created[0]!) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
    const delivery = deliveryOf(created[0]!);
    expect(delivery, `no listing.created for ${created[0]} among ${received.length} deliveries`).toBeDefined();
    expect(delivery!.headers["webhook-signature"]).toMatch(/^v1,/);
    const event = await verifyWebhook(hook.signing_secret, delivery!.body, delivery!.headers);
    expect(event).toMatchObject({ event_type: "listing.created", data: { listing_number: created[0] } });
    await expect(verifyWebhook(hook.signing_secret, `${delivery!.body} `, delivery!.headers)).rejects.toThrow(
      WebhookVerificationError,
    );
  }, 180_000);

  it("iterates the numbered tour pages", async () => {
    const made: string[] = [];
    for (const n of [1, 2, 3]) {
      const tour = await client.post("/api/v1/tours", {
        body: { address: `${n} Paging Road`, city: "Portside", state: "CA", zipcode: "94000" },
      });
      made.push(tour.tour_number);
    }
    const seen: string[] = [];
    for await (const tour of client.pages("/api/v1/tours", "tours", { query: { limit: 2, search: "Paging Road" } }))
      seen.push(tour.tour_number);
    expect(seen.sort()).toEqual(made.sort());
  }, 60_000);

  it("runs the guide's first five calls in a project that installed the folder", async () => {
    project = mkdtempSync(join(tmpdir(), "alms-integration-"));
    writeFileSync(
      join(project, "package.json"),
      JSON.stringify({ name: "integration", private: true, type: "module" }),
    );
    const install = await run(
      "npm",
      ["install", "--offline", "--no-audit", "--no-fund", join(root, "clients", "typescript")],
      project,
    );
    expect(install.code, install.output).toBe(0);
    // The guide's base URL is the default port; this server has its own.
    writeFileSync(join(project, "first-calls.ts"), firstFiveCalls().replace("http://127.0.0.1:8787", origin));
    const ran = await run(process.execPath, ["first-calls.ts"], project, { ALMS_API_KEY: apiKey });
    expect(ran.code, ran.output).toBe(0);
    // Step 5 catches the documented error and prints its message, doc_url and request_id.
    expect(ran.output).toMatch(/\/api\/v1\/docs\/errors#listing_not_activated \S+/);
  }, 120_000);
});
