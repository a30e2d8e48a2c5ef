import { type RouteHandler, z } from "@hono/zod-openapi";
import { STRIPE_SUBSCRIPTION_ID, subscriptionDeleted } from "../../billing/sandbox";
import { applyStripeEvent } from "../../billing/stripe";
import { subscriptionOfAgency } from "../../billing/subscriptions";
import { idempotencyMark } from "../../http/admission/idempotency-mark";
import type { AppEnv } from "../../http/env";
import { json, publicRoute } from "../../http/route";
import { presentSubscription, SubscriptionSchema } from "./create-subscription";
import { outsideHelperGuard, TEST_HELPERS_TAG } from "./schema";

export const cancelSubscriptionRoute = publicRoute(
  outsideHelperGuard("orders:read", ["subscription_not_found", "validation_string_pattern"]),
  {
    method: "post",
    path: "/api/v1/test_helpers/billing/subscriptions/{subscription_id}/cancel",
    operationId: "testHelperCancelSubscription",
    tags: [TEST_HELPERS_TAG],
    summary: "End a platform subscription (emits subscription.cancelled)",
    description:
      "What the payment provider reports when your agency's subscription ends: a Stripe-format " +
      "`customer.subscription.deleted` event (test mode) is applied exactly as `POST /hooks/stripe` applies a " +
      "verified one, and `subscription.cancelled` is emitted, once: cancelling an ended subscription again changes " +
      "nothing, emits nothing, and answers the ended subscription with `stripe_event.outcome` `ignored`. The " +
      "subscription must be one of your agency's, started with `POST /api/v1/test_helpers/billing/subscriptions` " +
      "or reported by the payment provider; another agency's or an unknown id is 404 `subscription_not_found`, and " +
      "an id not of the provider's form (`sub_…`) is 422 `validation_string_pattern`.",
    request: {
      params: z.object({
        subscription_id: z
          .string()
          .regex(STRIPE_SUBSCRIPTION_ID, "`sub_` followed by 1 to 64 letters or digits")
          .openapi({ description: "The subscription's id (`sub_…`).", example: "sub_3k2a1q8v2l0c9z7rj4mhx0ab" }),
      }),
    },
    responses: { 200: { description: "The ended subscription.", content: json(SubscriptionSchema) } },
  },
);

export const cancelSubscriptionHandler: RouteHandler<typeof cancelSubscriptionRoute, AppEnv> = async (c) => {
  const db = c.var.db;
  const agencyId = c.get("caller").agencyId;
  // Records are never removed nor moved to another agency, so this read stays true; ending the
  // subscription once is decided by the writing statement itself.
  const { id } = await subscriptionOfAgency(db, agencyId, c.req.valid("param").subscription_id);
  const event = subscriptionDeleted(agencyId, id);
  const outcome = await applyStripeEvent(db, event, idempotencyMark(c, db, { status: 200 }));
  return c.json(
    SubscriptionSchema.parse({
      ...presentSubscription(await subscriptionOfAgency(db, agencyId, id)),
      stripe_event: { id: event.id, type: event.type, outcome },
    }),
    200,
  );
};
