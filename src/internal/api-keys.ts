import { OpenAPIHono, z } from "@hono/zod-openapi";
import { and, asc, eq } from "drizzle-orm";
import { type Db, database } from "../db/client";
import { type ApiKey, apiKeys } from "../db/schema";
import { getKey, keySecrets, mintKey } from "../domain/api-keys";
import { KEY_PREFIXES, type KeyMode, ROTATION_GRACE_MS } from "../domain/keys";
import { SCOPES } from "../domain/roles";
import { changeKey } from "../durable/key-changes";
import type { AppEnv } from "../http/env";
import { internalRoute } from "../http/route";
import { validationHook } from "../http/validation";
import { nowIso } from "../lib/ids";
import { BudgetOverridesInput } from "../schemas/budgets";

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

async function present(db: Db, key: ApiKey) {
  const secrets = await keySecrets(db, key.id);
  const now = Date.now();
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

const keyParam = z.object({ key_id: z.string() });
const keyResponse = (description: string) =>
  ({ 200: { description, content: { "application/json": { schema: ApiKeySchema } } } }) as const;
const mintedResponse = (status: 200 | 201, description: string) =>
  ({ [status]: { description, content: { "application/json": { schema: MintedSchema } } } }) as const;
const isoInstant = z.iso.datetime({ offset: true });

const mint = internalRoute(["agency_not_found", "user_not_found", "key_mint_forbidden", "scope_not_grantable"], {
  method: "post",
  path: "/internal/v1/api-keys",
  operationId: "mintApiKey",
  tags: ["API keys"],
  summary: "Mint a key for an agency",
  description:
    "Minted by an agency owner (media_agency, broker) for its agency, or by a platform admin for any agency. The key's mode is this environment's. The secret is in this response only.",
  request: {
    body: {
      content: {
        "application/json": {
          schema: z.strictObject({
            agency_id: z.string(),
            minted_by_user_id: z.string(),
            name: z.string().max(100).optional(),
            scopes: z
              .array(z.enum(SCOPES))
              .min(1)
              .optional()
              .openapi({ description: "Defaults to every scope but `admin`." }),
            expires_at: isoInstant.nullable().optional(),
            prefix: z.enum(KEY_PREFIXES).optional().openapi({
              description: "`ma_live_` mints a legacy-prefixed live key; must match the environment's mode.",
            }),
          }),
        },
      },
    },
  },
  responses: mintedResponse(201, "The key and its secret."),
});

const list = internalRoute(["agency_not_found"], {
  method: "get",
  path: "/internal/v1/api-keys",
  operationId: "listApiKeys",
  tags: ["API keys"],
  summary: "List an agency's keys (never their secrets)",
  request: { query: z.strictObject({ agency_id: z.string() }) },
  responses: {
    200: {
      description: "The agency's keys.",
      content: { "application/json": { schema: z.object({ data: z.array(ApiKeySchema) }) } },
    },
  },
});

const get = internalRoute(["api_key_not_found"], {
  method: "get",
  path: "/internal/v1/api-keys/{key_id}",
  operationId: "getApiKey",
  tags: ["API keys"],
  summary: "Get a key",
  request: { params: keyParam },
  responses: keyResponse("The key."),
});

const rotate = internalRoute(["api_key_not_found", "api_key_not_rotatable"], {
  method: "post",
  path: "/internal/v1/api-keys/{key_id}/rotate",
  operationId: "rotateApiKey",
  tags: ["API keys"],
  summary: "Rotate a key: a new secret, the old one valid for 30 more days",
  request: { params: keyParam },
  responses: mintedResponse(200, "The key and its new secret."),
});

const revoke = internalRoute(["api_key_not_found", "api_key_already_revoked"], {
  method: "post",
  path: "/internal/v1/api-keys/{key_id}/revoke",
  operationId: "revokeApiKey",
  tags: ["API keys"],
  summary: "Revoke a key, immediately and for good",
  request: { params: keyParam },
  responses: keyResponse("The revoked key."),
});

const update = internalRoute(["api_key_not_found", "scope_not_grantable"], {
  method: "patch",
  path: "/internal/v1/api-keys/{key_id}",
  operationId: "updateApiKey",
  tags: ["API keys"],
  summary: "Disable or enable a key, set its expiry, scopes, name or rate-limit overrides",
  request: {
    params: keyParam,
    body: {
      content: {
        "application/json": {
          schema: z.strictObject({
            is_active: z.boolean().optional(),
            expires_at: isoInstant.nullable().optional(),
            scopes: z.array(z.enum(SCOPES)).min(1).optional(),
            name: z.string().max(100).optional(),
            rate_limit_overrides: BudgetOverridesInput.optional().openapi({
              description: "Per-endpoint budgets (requests per 60 s); null clears one override.",
            }),
          }),
        },
      },
    },
  },
  responses: keyResponse("The updated key."),
});

export const apiKeysInternal = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(mint, async (c) => {
    const b = c.req.valid("json");
    const db = database(c.env.DB);
    const { key, secret } = await mintKey(db, {
      agencyId: b.agency_id,
      mintedByUserId: b.minted_by_user_id,
      mode: c.env.API_MODE as KeyMode,
      prefix: b.prefix,
      name: b.name,
      scopes: b.scopes,
      expiresAt: b.expires_at,
    });
    return c.json({ key: await present(db, key), secret }, 201);
  })
  .openapi(list, async (c) => {
    const db = database(c.env.DB);
    const rows = await db
      .select()
      .from(apiKeys)
      .where(and(eq(apiKeys.agencyId, c.req.valid("query").agency_id)))
      .orderBy(asc(apiKeys.createdAt), asc(apiKeys.id));
    return c.json({ data: await Promise.all(rows.map((k) => present(db, k))) }, 200);
  })
  .openapi(get, async (c) => {
    const db = database(c.env.DB);
    return c.json(await present(db, await getKey(db, c.req.valid("param").key_id)), 200);
  })
  .openapi(rotate, async (c) => {
    const db = database(c.env.DB);
    const keyId = c.req.valid("param").key_id;
    const { key, secret } = await changeKey(c.env, keyId, { op: "rotate" });
    return c.json({ key: await present(db, key), secret: secret! }, 200);
  })
  .openapi(revoke, async (c) => {
    const db = database(c.env.DB);
    const keyId = c.req.valid("param").key_id;
    const { key } = await changeKey(c.env, keyId, { op: "revoke" });
    return c.json(await present(db, key), 200);
  })
  .openapi(update, async (c) => {
    const db = database(c.env.DB);
    const b = c.req.valid("json");
    const keyId = c.req.valid("param").key_id;
    const patch = {
      isActive: b.is_active,
      expiresAt: b.expires_at,
      scopes: b.scopes,
      name: b.name,
      rateLimitOverrides: b.rate_limit_overrides,
    };
    const { key } = await changeKey(c.env, keyId, { op: "update", patch });
    return c.json(await present(db, key), 200);
  });
