import { DurableObject } from "cloudflare:workers";

/** Per (agency, idempotency key): the in-progress lock and the cached response. */
export class IdempotencyLock extends DurableObject<Env> {}
