import type { RouteHandler } from "@hono/zod-openapi";
import { driveStarted } from "../../durable/replay-driver";
import { idempotencyMark } from "../../http/admission/idempotency-mark";
import type { AppEnv } from "../../http/env";
import { json, publicRoute, setLocation } from "../../http/route";
import { CreateReplayBody, presentReplay, rangeOf, WebhookReplaySchema } from "../../schemas/replays";
import { endpointIdParam } from "../../schemas/webhooks";
import { findEndpoint } from "../../webhooks/endpoints/records";
import { startReplay } from "../../webhooks/replays/records";
import { REPLAY_PAGE } from "../../webhooks/replays/step";

export const createReplayRoute = publicRoute(
  {
    endpoint: "replay_webhook_events",
    scope: "webhooks:write",
    roles: ["super_admin", "admin", "media_agency", "broker", "team_lead"],
    errors: [
      "webhook_endpoint_not_found",
      "webhook_replay_running",
      "webhook_replay_range_expired",
      "webhook_replay_range_invalid",
    ],
  },
  {
    method: "post",
    path: "/api/v1/webhooks/endpoints/{endpoint_id}/replays",
    operationId: "createWebhookReplay",
    tags: ["Webhooks"],
    summary: "Replay a range of events to a receiver",
    description:
      "Sends every event of a range again to this endpoint, in sequence order: after a sequence (`after_sequence`, " +
      "the last your receiver saw; up to `until_sequence`), or in a time window (`since`, `until`). The range is " +
      "fixed now, its end the latest event; later events go out live, beside the replay. Each event of the " +
      "endpoint's types that its filters select is a delivery of its own, with the event's own `event_id` and " +
      "`sequence`, signed like any delivery, marked by `replay_id` in the envelope and the `X-Webhook-Replay` " +
      "header; events written before the endpoint existed are included (a backfill). With `only_failed`, only " +
      "events whose delivery here ended dead are sent.\n\n" +
      `The replay sends one event at a time, at most ${REPLAY_PAGE} per step, beside the endpoint's live ` +
      "deliveries; a failed attempt, or an open breaker, holds it until the receiver answers again, and the " +
      "failed delivery is retried on the usual schedule. Follow it with `GET …/replays/{replay_id}`; stop it " +
      "with `DELETE`. One replay runs per endpoint: another while it runs is 409 `webhook_replay_running`. A " +
      "range starting before the events kept (30 days) is 422 `webhook_replay_range_expired`, whose " +
      "`details.oldest_sequence` is the oldest kept. Each event sent counts against the agency's " +
      "`webhook_deliveries` quota: a replay of every event of a range that does not fit is refused at once " +
      "(`agency_quota_exceeded`, with `details.requested`), one that filters waits while the agency is at its " +
      "quota. Idempotent like every write.",
    request: {
      params: endpointIdParam,
      body: { content: json(CreateReplayBody) },
    },
    responses: {
      202: {
        description: "The replay, running (or done at once for an empty range).",
        content: json(WebhookReplaySchema),
      },
    },
  },
);

export const createReplayHandler: RouteHandler<typeof createReplayRoute, AppEnv> = async (c) => {
  const db = c.var.db;
  const body = c.req.valid("json");
  const endpoint = await findEndpoint(db, c.get("caller").agencyId, c.req.valid("param").endpoint_id);
  const replay = await startReplay(db, endpoint, rangeOf(body), body.only_failed ?? false, ({ id }) =>
    idempotencyMark(c, db, { status: 202, resourceType: "webhook_replay", resourceId: id }),
  );
  await driveStarted(c.env, replay);
  setLocation(c, `/api/v1/webhooks/endpoints/${endpoint.id}/replays/${replay.id}`);
  return c.json(WebhookReplaySchema.parse(presentReplay(replay)), 202);
};
