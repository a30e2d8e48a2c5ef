import { type RouteHandler, z } from "@hono/zod-openapi";
import { keyGate } from "../../accounts/key-changes";
import { ENDPOINT_NAMES } from "../../domain/budgets";
import { getAgency } from "../../domain/people/hierarchy";
import { ROLES, SCOPES } from "../../domain/roles";
import type { AppEnv } from "../../http/env";
import { json, publicRoute } from "../../http/route";
import { DomainError } from "../../lib/errors";

const IdentitySchema = z
  .object({
    key_id: z.string().openapi({ description: "The calling key.", example: "key_0mhx3k2a1q8v2l0c9z7rj4" }),
    agency: z
      .object({
        id: z.string().openapi({ example: "agy_0mhx3k2a1q8v2l0c9z7rj4" }),
        name: z.string().openapi({ example: "Harbour Media" }),
        kind: z.enum(["media_agency", "broker", "platform"]).openapi({ example: "media_agency" }),
      })
      .openapi({ description: "The agency the key acts for: every answer is confined to it." }),
    mode: z.enum(["test", "live"]).openapi({
      description: "`test` for an `sk_test_` key (the sandbox), `live` for an `sk_live_` key.",
      example: "test",
    }),
    role: z.enum(ROLES).openapi({
      description: "The role every request of the key acts with: its minting user's role at minting.",
      example: "media_agency",
    }),
    user_id: z.string().openapi({ description: "The user who minted the key.", example: "usr_0mhx3k2a1q8v2l0c9z7rj4" }),
    scopes: z.array(z.enum(SCOPES)).openapi({ description: "What the key may do.", example: ["listings:read"] }),
    budgets: z.partialRecord(z.enum(ENDPOINT_NAMES), z.number().int()).openapi({
      description:
        "Requests per 60-second window the key may send, by endpoint name, its overrides applied. What is " +
        "left of each window: getLimits.",
      example: { create_listing: 200, read_listing_single: 600 },
    }),
  })
  .openapi("Identity");

export const getIdentityRoute = publicRoute(
  { endpoint: "read_identity" },
  {
    method: "get",
    path: "/api/v1/me",
    operationId: "getIdentity",
    tags: ["Limits"],
    summary: "Who the calling key is",
    description:
      "The calling key's id, its agency (id, name, kind), its mode, role, minting user and scopes, and its budget " +
      "per endpoint name. Any valid key may read it, whatever its scopes. Useful to check a key before wiring it in.",
    responses: { 200: { description: "The calling key.", content: json(IdentitySchema) } },
  },
);

export const getIdentity: RouteHandler<typeof getIdentityRoute, AppEnv> = async (c) => {
  const caller = c.get("caller");
  const keyId = caller.keyId;
  if (!keyId) throw new DomainError("internal_error", { message: "The identity route needs a key." });
  const [windows, agency] = await Promise.all([
    keyGate(c.env, keyId).windows(keyId),
    getAgency(c.var.db, caller.agencyId),
  ]);
  return c.json(
    IdentitySchema.parse({
      key_id: keyId,
      agency: { id: agency.id, name: agency.name, kind: agency.kind },
      mode: c.env.API_MODE,
      role: caller.role,
      user_id: caller.userId,
      scopes: [...caller.scopes].sort(),
      budgets: Object.fromEntries(Object.entries(windows ?? {}).map(([name, w]) => [name, w.limit])),
    }),
    200,
  );
};
