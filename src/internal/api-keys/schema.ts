import { z } from "@hono/zod-openapi";
import type { KeyWithSecrets } from "../../domain/api-keys";
import { ROTATION_GRACE_MS } from "../../domain/keys";
import { SCOPES } from "../../domain/roles";
import { json } from "../../http/route";
import { nowIso } from "../../lib/ids";

export const ApiKeySchema = z
  .object({
    id: z.string().openapi({ description: "Public key id (never a secret).", example: "key_0mhx3k2a1q8v2l0c9z7rj4" }),
    agency_id: z.string(),
    minted_by_user_id: z.string(),
    role: z.string().openapi({ description: "The caller role of requests made with this key." }),
    mode: z.enum(["test", "live"]),
    name: z.string(),
    scopes: z.array(z.enum(SCOPES)),
    state: z.enum(["active", "rotating", "disabled", "revoked", "expired"]),
    is_active: z.boolean(),
    expires_at: z.string().nullable(),
    revoked_at: z.string().nullable(),
    rotation_started_at: z.string().nullable(),
    rotation_grace_ends_at: z.string().nullable(),
    secrets: z
      .array(z.object({ prefix: z.string(), last4: z.string(), superseded_at: z.string().nullable() }))
      .openapi({ description: "Secrets that still authenticate, for display: prefix and last four characters only." }),
    rate_limit_overrides: z.record(z.string(), z.number().int()),
    created_at: z.string(),
  })
  .openapi("ApiKey");

const MintedSchema = z
  .object({
    key: ApiKeySchema,
    secret: z.string().openapi({ description: "The plaintext secret. Shown once; it cannot be recovered." }),
  })
  .openapi("MintedApiKey");

export function presentKey({ key, secrets }: KeyWithSecrets, now = Date.now()) {
  const graceOpen = secrets.some((s) => s.supersededAt && Date.parse(s.supersededAt) + ROTATION_GRACE_MS > now);
  const state = key.revokedAt
    ? "revoked"
    : !key.isActive
      ? "disabled"
      : key.expiresAt && Date.parse(key.expiresAt) <= now
        ? "expired"
        : graceOpen
          ? "rotating"
          : "active";
  return {
    id: key.id,
    agency_id: key.agencyId,
    minted_by_user_id: key.mintedByUserId,
    role: key.role,
    mode: key.mode,
    name: key.name,
    scopes: key.scopes as (typeof SCOPES)[number][],
    state,
    is_active: key.isActive,
    expires_at: key.expiresAt,
    revoked_at: key.revokedAt,
    rotation_started_at: key.rotationStartedAt,
    rotation_grace_ends_at:
      graceOpen && key.rotationStartedAt ? nowIso(Date.parse(key.rotationStartedAt) + ROTATION_GRACE_MS) : null,
    secrets: secrets.map((s) => ({ prefix: s.prefix, last4: s.last4, superseded_at: s.supersededAt })),
    rate_limit_overrides: key.rateLimitOverrides,
    created_at: key.createdAt,
  } as const;
}

export const keyParam = z.object({ key_id: z.string() });

export const keyResponse = (description: string) => ({ 200: { description, content: json(ApiKeySchema) } }) as const;

export const mintedResponse = (status: 200 | 201, description: string) =>
  ({ [status]: { description, content: json(MintedSchema) } }) as const;

export const isoInstant = z.iso.datetime({ offset: true });
