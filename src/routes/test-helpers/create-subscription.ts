import { type RouteHandler, z } from "@hono/zod-openapi";
import { subscriptionCreated } from "../../billing/sandbox";
import { applyStripeEvent } from "../../billing/stripe";
import { json } from "../../http/content";
import type { AppEnv } from "../../http/env";
import { idempotencyMark } from "../../http/idempotency-mark";
import { publicRoute } from "../../http/route";
import { helperGuard, StripeEventSchema, TEST_HELPERS_TAG } from "./schema";

export const SubscriptionSchema = z.object({
  subscription_id: z.string().openapi({
    description: "The payment provider's subscription id: `data.subscription_id` of the subscription events.",
    example: "sub_3k2a1q8v2l0c9z7rj4mhx0ab",
  }),
  stripe_event: StripeEventSchema,
});

export const createSubscriptionRoute = publicRoute(helperGuard("orders:read"), {
  method: "post",
  path: "/api/v1/test_helpers/billing/subscriptions",
  operationId: "testHelperCreateSubscription",
  tags: [TEST_HELPERS_TAG],
  summary: "Start a platform subscription (emits subscription.created)",
  description:
    "What the payment provider reports when your agency subscribes: a Stripe-format " +
    "`customer.subscription.created` event (test mode) is applied exactly as `POST /hooks/stripe` applies a " +
    "verified one, and `subscription.created` is emitted.",
  request: {
    body: {
      content: json(
        z.strictObject({
          plan: z
            .string()
            .trim()
            .min(1)
            .max(100)
            .default("sandbox")
            .openapi({ description: "The plan's name (`data.plan`); `sandbox` when omitted.", example: "Pro monthly" }),
        }),
      ),
    },
  },
  responses: { 201: { description: "The subscription.", content: json(SubscriptionSchema) } },
});

export const createSubscriptionHandler: RouteHandler<typeof createSubscriptionRoute, AppEnv> = async (c) => {
  const db = c.var.db;
  const event = subscriptionCreated(c.get("caller").agencyId, c.req.valid("json").plan);
  const outcome = await applyStripeEvent(db, event, idempotencyMark(c, db, { status: 201 }));
  return c.json(
    SubscriptionSchema.parse({
      subscription_id: event.data.object.id,
      stripe_event: { id: event.id, type: event.type, outcome },
    }),
    201,
  );
};
