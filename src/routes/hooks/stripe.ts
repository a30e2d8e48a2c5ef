import { Hono } from "hono";
import { applyStripeEvent, verifyStripeSignature } from "../../billing/stripe";
import type { AppEnv } from "../../http/env";
import { routeToNamed } from "../../http/shard-route";
import { readBodyText } from "../../http/wire";
import { DomainError } from "../../lib/errors";

export const STRIPE_HOOK_PATH = "/hooks/stripe";
/** Stripe events are a few KiB; the cap leaves room for large invoices and stops anything bigger as it streams in. */
export const STRIPE_BODY_LIMIT = 512 * 1024;

/**
 * The payment provider's webhook receiver (Stripe's format). It exists only where
 * STRIPE_WEBHOOK_SECRET is configured. Unknown event types are acknowledged and ignored,
 * so Stripe does not retry them; a bad signature is refused.
 */
export const stripeHook = new Hono<AppEnv>().post(STRIPE_HOOK_PATH, async (c) => {
  const secret = c.env.STRIPE_WEBHOOK_SECRET;
  if (!secret) throw new DomainError("request_path_not_found", { message: `No route POST ${STRIPE_HOOK_PATH}.` });
  const raw = await readBodyText(c, STRIPE_BODY_LIMIT);
  if (!(await verifyStripeSignature(raw, c.req.header("stripe-signature"), secret)))
    throw new DomainError("stripe_signature_invalid");
  let event: { id: string; type: string; data: { object: Record<string, unknown> } };
  try {
    event = JSON.parse(raw);
  } catch {
    throw new DomainError("request_body_not_json", { details: { parse_error_position: null } });
  }
  // The event names its agency in its metadata: it is applied on that agency's shard.
  const named = (event.data?.object?.metadata as { agency_id?: unknown } | undefined)?.agency_id;
  await routeToNamed(c, "agency", typeof named === "string" ? named : undefined);
  const outcome = await applyStripeEvent(c.var.db, event);
  return c.json({ received: true, outcome }, 200);
});
