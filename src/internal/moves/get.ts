import { type RouteHandler, z } from "@hono/zod-openapi";
import { getMove } from "../../durable/mover/moves";
import type { AppEnv } from "../../http/env";
import { internalRoute, json } from "../../http/route";
import { MoveSchema, presentMove } from "./schema";

export const getMoveRoute = internalRoute(["move_not_found"], {
  method: "get",
  path: "/internal/v1/moves/{move_id}",
  operationId: "getMove",
  tags: ["Operations"],
  summary: "Get an agency's move",
  description: "Where the move is, and its counts. A move survives a restart of the Worker: it resumes where it was.",
  request: { params: z.object({ move_id: z.string() }) },
  responses: { 200: { description: "The move.", content: json(MoveSchema) } },
});

export const getMoveHandler: RouteHandler<typeof getMoveRoute, AppEnv> = async (c) =>
  c.json(presentMove(await getMove(c.env, c.req.valid("param").move_id)), 200);
