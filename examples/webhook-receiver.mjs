// A webhook receiver that verifies deliveries the way the service expects. Every delivery
// carries two signatures over the same raw body; either one proves it (this receiver
// accepts a delivery if either verifies):
//   a. X-Webhook-Signature is sha256=<hex HMAC-SHA256 of the raw body, keyed with your
//      endpoint's whole signing secret (whsec_… included)> (GitHub's scheme);
//   b. Standard Webhooks: webhook-signature is "v1,<base64 HMAC-SHA256 of
//      `${webhook-id}.${webhook-timestamp}.${raw body}`>", keyed with the base64-decoded
//      bytes after whsec_ (what the standardwebhooks libraries do with the secret); the
//      header may list several space-separated signatures, one of which must match.
// Both are compared in constant time. Then:
//   1. the envelope's `timestamp` (and webhook-timestamp, when sent) is within 5 minutes
//      of this machine's clock;
//   2. the envelope's `nonce` was not seen in the last 10 minutes.
// Then deduplicate on `event_id` (= webhook-id; retries and replays reuse it) and answer 2xx quickly.
//
//   WEBHOOK_SECRET=whsec_… PORT=9999 node examples/webhook-receiver.mjs
import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer } from "node:http";

const secret = process.env.WEBHOOK_SECRET;
if (!secret) {
  console.error("Set WEBHOOK_SECRET to the signing secret returned when you registered the endpoint.");
  process.exit(2);
}
const port = Number(process.env.PORT ?? 9999);
const TOLERANCE_S = 5 * 60;
const NONCE_MEMORY_MS = 10 * 60 * 1000;
const nonces = new Map(); // nonce -> time first seen
const processed = new Set(); // event ids already handled

const sameBytes = (a, b) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b ?? "");
  return x.length === y.length && timingSafeEqual(x, y);
};

// a. sha256=<hex> over the raw body, keyed with the whole secret string.
function verifyHubSignature(raw, header) {
  return sameBytes(`sha256=${createHmac("sha256", secret).update(raw).digest("hex")}`, header);
}

// b. Standard Webhooks, keyed with the decoded bytes of the base64 after whsec_.
const standardKey = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
function verifyStandardSignature(raw, headers) {
  const id = headers["webhook-id"];
  const timestamp = headers["webhook-timestamp"];
  const signatures = headers["webhook-signature"];
  if (!id || !timestamp || !signatures || standardKey.length === 0) return false;
  if (!/^\d+$/.test(timestamp) || Math.abs(Date.now() / 1000 - Number(timestamp)) > TOLERANCE_S) return false;
  const mac = createHmac("sha256", standardKey).update(`${id}.${timestamp}.`).update(raw).digest("base64");
  return signatures.split(" ").some((entry) => entry.startsWith("v1,") && sameBytes(mac, entry.slice("v1,".length)));
}

function rememberNonce(nonce, now) {
  for (const [n, seen] of nonces) if (now - seen > NONCE_MEMORY_MS) nonces.delete(n);
  if (nonces.has(nonce)) return false;
  nonces.set(nonce, now);
  return true;
}

createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const raw = Buffer.concat(chunks); // verify the bytes as received, before any parsing
    const refuse = (status, why) => {
      console.log(`refused: ${why}`);
      res.writeHead(status).end(why);
    };
    const verified =
      verifyHubSignature(raw, req.headers["x-webhook-signature"]) || verifyStandardSignature(raw, req.headers);
    if (!verified) return refuse(401, "bad signature");
    const event = JSON.parse(raw.toString("utf8"));
    const now = Date.now();
    if (Math.abs(now / 1000 - event.timestamp) > TOLERANCE_S) return refuse(400, "timestamp outside 5 minutes");
    if (!rememberNonce(event.nonce, now)) return refuse(409, "nonce seen in the last 10 minutes");
    if (processed.has(event.event_id)) {
      console.log(`${event.event_type} ${event.event_id} again (a retry or replay): already handled`);
      res.writeHead(200).end("duplicate");
      return;
    }
    processed.add(event.event_id);
    console.log(`${event.event_type} ${event.event_id} ${JSON.stringify(event.data)}`);
    res.writeHead(200).end("ok");
  });
}).listen(port, "127.0.0.1", () => console.log(`listening on http://127.0.0.1:${port}`));
