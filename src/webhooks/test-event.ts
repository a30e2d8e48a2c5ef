import type { WebhookEndpoint } from "../db/schema";
import { DomainError } from "../lib/errors";
import { newId } from "../lib/ids";
import { checkOutboundUrl } from "../lib/outbound-url";
import { postEnvelope, signingSecret } from "./delivery/attempt";
import { signer } from "./signing";

/** A signed `webhook.test` ping to one endpoint, answered synchronously; nothing is recorded. */
export async function sendTestEvent(env: Env, endpoint: WebhookEndpoint) {
  const verdict = checkOutboundUrl(endpoint.url, { allowLocalHttp: env.ALLOW_HTTP_RECEIVERS === "true" });
  if (!verdict.ok)
    throw new DomainError("webhook_url_not_allowed", {
      message: `url ${verdict.reason}.`,
      details: { field: "url", reason: verdict.reason },
    });
  const sign = await signer(await signingSecret(env, endpoint));
  const started = Date.now();
  const eventId = newId("evt_test");
  const data = { endpoint_id: endpoint.id, message: "A test event from the Agency Listing and Media Service." };
  const { status, error } = await postEnvelope(
    verdict.url,
    sign,
    { id: eventId, type: "webhook.test", apiVersion: "2026-11-01", data },
    newId("whd_test"),
    started,
  );
  return {
    delivered: error === null,
    event_id: eventId,
    response_status: status,
    latency_ms: Date.now() - started,
    error,
  };
}
