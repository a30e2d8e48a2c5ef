import { type RouteHandler, z } from "@hono/zod-openapi";
import { enterSecret, shardOfEnv } from "../../db/shards";
import { mintKey, withSecrets } from "../../domain/api-keys";
import { hashSecret, KEY_PREFIXES, type KeyMode } from "../../domain/keys";
import { anchorStaff } from "../../domain/people/placement";
import { SCOPES } from "../../domain/roles";
import type { AppEnv } from "../../http/env";
import { internalRoute, json } from "../../http/route";
import { keyringOf } from "../../lib/crypto/keyring";
import { isoInstant, mintedResponse, presentKey } from "./schema";

export const mintApiKeyRoute = internalRoute(
  ["agency_not_found", "user_not_found", "key_mint_forbidden", "scope_not_grantable", "agency_quota_exceeded"],
  {
    method: "post",
    path: "/internal/v1/api-keys",
    operationId: "mintApiKey",
    tags: ["API keys"],
    summary: "Mint a key for an agency",
    description:
      "Minted by an agency owner (media_agency, broker) for its agency, or by a platform admin for any agency. " +
      "The key's mode is this environment's. The secret is in this response only.",
    request: {
      body: {
        content: json(
          z.strictObject({
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
        ),
      },
    },
    responses: mintedResponse(201, "The key and its secret."),
  },
);

export const mintApiKeyHandler: RouteHandler<typeof mintApiKeyRoute, AppEnv> = async (c) => {
  const b = c.req.valid("json");
  const db = c.var.db;
  await anchorStaff(c.env, shardOfEnv(c.env), b.minted_by_user_id);
  const { key, secret } = await mintKey(db, {
    agencyId: b.agency_id,
    mintedByUserId: b.minted_by_user_id,
    mode: c.env.API_MODE as KeyMode,
    prefix: b.prefix,
    name: b.name,
    scopes: b.scopes,
    expiresAt: b.expires_at,
    ring: keyringOf(c.env),
  });
  // A key of another shard than the control database's is found through the control database's directory.
  await enterSecret(c.env, shardOfEnv(c.env), {
    hash: await hashSecret(secret),
    keyId: key.id,
    agencyId: key.agencyId,
  });
  return c.json({ key: presentKey(await withSecrets(db, key)), secret }, 201);
};
