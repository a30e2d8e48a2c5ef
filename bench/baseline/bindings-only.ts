// The product's bindings with none of its code: `wrangler dev bench/baseline/bindings-only.ts`
// starts it with wrangler.jsonc's databases, Durable Objects, queues, bucket and assets, so the
// startup phase can tell what the local runtime's bindings add to a cold start from what the
// product's code adds. Its Durable Object classes are the product's names, with no behaviour.
import { DurableObject } from "cloudflare:workers";

export class KeyGate extends DurableObject {}
export class IdempotencyLedger extends DurableObject {}
export class IdempotencyLock extends DurableObject {}
export class AgencyBudget extends DurableObject {}
export class ShardMover extends DurableObject {}
export class WebhookReplayer extends DurableObject {}

export default {
  fetch: () => new Response(null, { status: 401 }),
  queue: async () => {},
  scheduled: async () => {},
} satisfies ExportedHandler;
