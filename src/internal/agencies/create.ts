import { type RouteHandler, z } from "@hono/zod-openapi";
import { placeAgency } from "../../domain/people/placement";
import type { AppEnv } from "../../http/env";
import { created, internalRoute, json, setLocation } from "../../http/route";
import { AgencySchema, presentAgency } from "./schema";

export const createAgencyRoute = internalRoute([], {
  method: "post",
  path: "/internal/v1/agencies",
  operationId: "createAgency",
  tags: ["Agencies"],
  summary: "Create an agency (or the platform's own staff agency)",
  description:
    "The agency goes to the open shard with the fewest agencies (`OPEN_SHARDS`, see the operators' guide); its " +
    "record names the `shard`.",
  request: {
    body: {
      content: json(
        z.strictObject({
          name: z.string().min(1).max(200),
          kind: z.enum(["media_agency", "broker", "platform"]),
          cancellation_notice_hours: z.number().int().min(0).max(720).optional(),
        }),
      ),
    },
  },
  responses: created("The agency.", AgencySchema, "/internal/v1/agencies/agy_0mhx3k2a1q8v2l0c9z7rj4"),
});

export const createAgencyHandler: RouteHandler<typeof createAgencyRoute, AppEnv> = async (c) => {
  const body = c.req.valid("json");
  const agency = await placeAgency(c.env, {
    name: body.name,
    kind: body.kind,
    cancellationNoticeHours: body.cancellation_notice_hours,
  });
  setLocation(c, `/internal/v1/agencies/${agency.id}`);
  return c.json(presentAgency(agency), 201);
};
