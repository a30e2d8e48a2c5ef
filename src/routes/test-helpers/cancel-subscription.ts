import { type RouteHandler, z } from "@hono/zod-openapi";
import { STRIPE_SUBSCRIPTION_ID, subscriptionDeleted } from "../../billing/sandbox";
import { applyStripeEvent } from "../../billing/stripe";
import { json } from "../../http/content";
import type { AppEnv } from "../../http/env";
import { idempotencyMark } from "../../http/idempotency-mark";
import { publicRoute } from "../../http/route";
import { SubscriptionSchema } from "./create-subscription";
import { helperGuard, TEST_HELPERS_TAG } from "./schema";

export const cancelSubscriptionRoute = publicRoute(helperGuard("orders:read", ["validation_string_pattern"]), {
  method: "post",
  path: "/api/v1/test_helpers/billing/subscriptions/{subscription_id}/cancel",
  operationId: "testHelperCancelSubscription",
  tags: [TEST_HELPERS_TAG],
  summary: "End a platform subscription (emits subscription.cancelled)",
  description:
    "What the payment provider reports when your agency's subscription ends: a Stripe-format " +
    "`customer.subscription.deleted` event (test mode) is applied exactly as `POST /hooks/stripe` applies a " +
    "verified one, and `subscription.cancelled` is emitted. The service keeps no subscription records of its own " +
    "(the provider does), so any subscription id of the provider's form (`sub_…`) is accepted; another form " +
    "is 422 `validation_string_pattern`.",
  request: {
    params: z.object({
      subscription_id: z
        .string()
        .regex(STRIPE_SUBSCRIPTION_ID)
        .openapi({ description: "The subscription's id (`sub_…`).", example: "sub_3k2a1q8v2l0c9z7rj4mhx0ab" }),
    }),
  },
  responses: { 200: { description: "The ended subscription.", content: json(SubscriptionSchema) } },
});

export const cancelSubscriptionHandler: RouteHandler<typeof cancelSubscriptionRoute, AppEnv> = async (c) => {
  const db = c.var.db;
  const subscriptionId = c.req.valid("param").subscription_id;
  const event = subscriptionDeleted(c.get("caller").agencyId, subscriptionId);
  const outcome = await applyStripeEvent(db, event, idempotencyMark(c, db, { status: 200 }));
  return c.json(
    SubscriptionSchema.parse({
      subscription_id: subscriptionId,
      stripe_event: { id: event.id, type: event.type, outcome },
    }),
    200,
  );
};
