import type { ApiKey } from "../db/schema";
import type { KeyChange } from "../domain/api-keys";
import { DomainError } from "../lib/errors";
import type { Refusal } from "./key-gate";

/** The gate of a key: its mutable state, its rate windows, and the only writer of its changes. */
export const keyGate = (env: Env, keyId: string) => env.KEY_GATE.getByName(keyId);

/** Changes a key through its gate, so the very next request sees the change. */
export async function changeKey(env: Env, keyId: string, change: KeyChange): Promise<{ key: ApiKey; secret?: string }> {
  const result = (await keyGate(env, keyId).apply(keyId, change)) as
    | { ok: true; key: ApiKey; secret?: string }
    | Refusal;
  if (!result.ok) throw new DomainError(result.code, { message: result.message, details: result.details });
  return { key: result.key as ApiKey, secret: result.secret };
}
