// A webhook receiver that verifies deliveries the way the service expects:
//   1. X-Webhook-Signature is sha256=<hex HMAC-SHA256 of the raw body, keyed with your
//      endpoint's whole signing secret (whsec_… included)>, compared in constant time;
//   2. the envelope's `timestamp` is within 5 minutes of this machine's clock;
//   3. the envelope's `nonce` was not seen in the last 10 minutes.
// Then deduplicate on `event_id` (retries and replays reuse it) and answer 2xx quickly.
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

function verifySignature(raw, header) {
  const expected = Buffer.from(`sha256=${createHmac("sha256", secret).update(raw).digest("hex")}`);
  const given = Buffer.from(header ?? "");
  return given.length === expected.length && timingSafeEqual(given, expected);
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
    if (!verifySignature(raw, req.headers["x-webhook-signature"])) return refuse(401, "bad signature");
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
