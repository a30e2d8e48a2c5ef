import { z } from "@hono/zod-openapi";

export const agencyEndpointParams = z.object({
  agency_id: z.string().openapi({ example: "agn_0mhx3k2a1q8v2l0c9z7rj4" }),
  endpoint_id: z.string().openapi({ example: "we_0mhx3k2a1q8v2l0c9z7rj4" }),
});

export const agencyReplayParams = agencyEndpointParams.extend({
  replay_id: z.string().openapi({ example: "rpl_0mhx9q2b7c1d4e5f6g7h8j" }),
});

export const REPLAYS_PATH = "/internal/v1/agencies/{agency_id}/webhook-endpoints/{endpoint_id}/replays";
