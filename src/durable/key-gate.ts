import { DurableObject } from "cloudflare:workers";

/** Per-key gate: authentication state and the key's rate-limit windows. */
export class KeyGate extends DurableObject<Env> {}
