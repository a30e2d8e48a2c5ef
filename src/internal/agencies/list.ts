import { type RouteHandler, z } from "@hono/zod-openapi";
import { pageAgenciesOfEveryShard } from "../../domain/people/placement";
import type { AppEnv } from "../../http/env";
import { internalRoute, json } from "../../http/route";
import { keyringOf } from "../../lib/crypto/keyring";
import { cursorQuery, pageBody, pageSchema } from "../../schemas/page";
import { AgencySchema, presentAgency } from "./schema";

export const listAgenciesRoute = internalRoute([], {
  method: "get",
  path: "/internal/v1/agencies",
  operationId: "listAgencies",
  tags: ["Agencies"],
  summary: "List agencies, oldest first",
  description: "Every shard's agencies, merged oldest first; each names its `shard`.",
  request: { query: z.strictObject(cursorQuery) },
  responses: {
    200: {
      description: "A page of agencies.",
      content: json(pageSchema(AgencySchema, "AgencyPage")),
    },
  },
});

export const listAgenciesHandler: RouteHandler<typeof listAgenciesRoute, AppEnv> = async (c) => {
  const { cursor, limit } = c.req.valid("query");
  const page = await pageAgenciesOfEveryShard(c.env, { keyring: keyringOf(c.env), cursor, limit });
  return c.json(pageBody(page, presentAgency), 200);
};
