import { type RouteHandler, z } from "@hono/zod-openapi";
import { subscriptionCreated } from "../../billing/sandbox";
import { applyStripeEvent } from "../../billing/stripe";
import { subscriptionOfAgency } from "../../billing/subscriptions";
import type { Subscription } from "../../db/schema";
import { idempotencyMark } from "../../http/admission/idempotency-mark";
import type { AppEnv } from "../../http/env";
import { json, publicRoute } from "../../http/route";
import { outsideHelperGuard, StripeEventSchema, TEST_HELPERS_TAG } from "./schema";

export const SubscriptionSchema = z.object({
  subscription_id: z.string().openapi({
    description: "The payment provider's subscription id: `data.subscription_id` of the subscription events.",
    example: "sub_3k2a1q8v2l0c9z7rj4mhx0ab",
  }),
  status: z.string().openapi({
    description: "The provider's status when it started (`active`), `cancelled` once it ended.",
    example: "active",
  }),
  plan: z.string().nullable().openapi({ example: "Pro monthly" }),
  cancelled_at: z
    .string()
    .nullable()
    .openapi({ description: "When it ended, ISO 8601 UTC; null while it runs.", example: null }),
  stripe_event: StripeEventSchema,
});

export const presentSubscription = (s: Subscription) => ({
  subscription_id: s.id,
  status: s.status,
  plan: s.plan,
  cancelled_at: s.cancelledAt,
});

export const createSubscriptionRoute = publicRoute(outsideHelperGuard("orders:read"), {
  method: "post",
  path: "/api/v1/test_helpers/billing/subscriptions",
  operationId: "testHelperCreateSubscription",
  tags: [TEST_HELPERS_TAG],
  summary: "Start a platform subscription (emits subscription.created)",
  description:
    "What the payment provider reports when your agency subscribes: a Stripe-format " +
    "`customer.subscription.created` event (test mode) is applied exactly as `POST /hooks/stripe` applies a " +
    "verified one: the subscription is recorded for your agency and `subscription.created` is emitted. End it " +
    "with `POST /api/v1/test_helpers/billing/subscriptions/{subscription_id}/cancel`.",
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
  const agencyId = c.get("caller").agencyId;
  const event = subscriptionCreated(agencyId, c.req.valid("json").plan);
  const outcome = await applyStripeEvent(db, event, idempotencyMark(c, db, { status: 201 }));
  return c.json(
    SubscriptionSchema.parse({
      ...presentSubscription(await subscriptionOfAgency(db, agencyId, String(event.data.object.id))),
      stripe_event: { id: event.id, type: event.type, outcome },
    }),
    201,
  );
};
