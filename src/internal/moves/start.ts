import { type RouteHandler, z } from "@hono/zod-openapi";
import { startMove } from "../../durable/mover/moves";
import type { AppEnv } from "../../http/env";
import { internalRoute, json, setLocation } from "../../http/route";
import { MoveInput, MoveSchema, presentMove } from "./schema";

export const startMoveRoute = internalRoute(["agency_not_found", "agency_move_refused", "agency_move_in_progress"], {
  method: "post",
  path: "/internal/v1/agencies/{agency_id}/move",
  operationId: "moveAgency",
  tags: ["Operations"],
  summary: "Move an agency to another shard",
  description:
    "Starts moving the agency's rows to `to_shard` while it serves, and answers at once with the move: follow it " +
    "with GET /internal/v1/moves/{move_id}. Reads answer throughout; writes pause only for the switch (503 " +
    "`agency_moving` with `Retry-After`, see the operators' guide). A move that cannot finish leaves the agency " +
    "whole on its old shard. One move of an agency runs at a time.",
  request: { params: z.object({ agency_id: z.string() }), body: { content: json(MoveInput) } },
  responses: {
    202: {
      description: "The move, started.",
      headers: z.object({ Location: z.string().openapi({ example: "/internal/v1/moves/mov_0mhx3k2a1q8v2l0c9z7rj4" }) }),
      content: json(MoveSchema),
    },
  },
});

export const startMoveHandler: RouteHandler<typeof startMoveRoute, AppEnv> = async (c) => {
  const move = await startMove(c.env, c.req.valid("param").agency_id, c.req.valid("json").to_shard);
  setLocation(c, `/internal/v1/moves/${move.id}`);
  return c.json(presentMove(move), 202);
};
