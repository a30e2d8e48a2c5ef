import { type RouteHandler, z } from "@hono/zod-openapi";
import { placedAgency } from "../../domain/people/placement";
import type { AppEnv } from "../../http/env";
import { internalRoute, json } from "../../http/route";
import { AgencySchema, presentAgency } from "./schema";

export const getAgencyRoute = internalRoute(["agency_not_found"], {
  method: "get",
  path: "/internal/v1/agencies/{agency_id}",
  operationId: "getAgency",
  tags: ["Agencies"],
  summary: "Get an agency",
  request: { params: z.object({ agency_id: z.string() }) },
  responses: { 200: { description: "The agency.", content: json(AgencySchema) } },
});

export const getAgencyHandler: RouteHandler<typeof getAgencyRoute, AppEnv> = async (c) =>
  c.json(presentAgency(await placedAgency(c.env, c.req.valid("param").agency_id)), 200);
