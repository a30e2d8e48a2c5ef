import { OpenAPIHono, z } from "@hono/zod-openapi";
import { database } from "../db/client";
import type { Agency } from "../db/schema";
import { createAgency, getAgency } from "../domain/hierarchy";
import { pageAgencies } from "../domain/users";
import type { AppEnv } from "../http/env";
import { internalRoute } from "../http/route";
import { validationHook } from "../http/validation";
import { cursorQuery, pageBody, pageSchema } from "../schemas/page";

export const AgencySchema = z
  .object({
    id: z.string().openapi({ example: "agy_0mhx3k2a1q8v2l0c9z7rj4" }),
    name: z.string().openapi({ example: "Harbour Media" }),
    kind: z.enum(["media_agency", "broker", "platform"]),
    cancellation_notice_hours: z
      .number()
      .int()
      .openapi({ description: "No-fee cancellation ends this many hours before the first scheduled shoot." }),
    created_at: z.string(),
  })
  .openapi("Agency");

export const presentAgency = (a: Agency) => ({
  id: a.id,
  name: a.name,
  kind: a.kind,
  cancellation_notice_hours: a.cancellationNoticeHours,
  created_at: a.createdAt,
});

const create = internalRoute([], {
  method: "post",
  path: "/internal/v1/agencies",
  operationId: "createAgency",
  tags: ["Agencies"],
  summary: "Create an agency (or the platform's own staff agency)",
  request: {
    body: {
      content: {
        "application/json": {
          schema: z.strictObject({
            name: z.string().min(1).max(200),
            kind: z.enum(["media_agency", "broker", "platform"]),
            cancellation_notice_hours: z.number().int().min(0).max(720).optional(),
          }),
        },
      },
    },
  },
  responses: { 201: { description: "The agency.", content: { "application/json": { schema: AgencySchema } } } },
});

const list = internalRoute([], {
  method: "get",
  path: "/internal/v1/agencies",
  operationId: "listAgencies",
  tags: ["Agencies"],
  summary: "List agencies, oldest first",
  request: { query: z.strictObject(cursorQuery) },
  responses: {
    200: {
      description: "A page of agencies.",
      content: { "application/json": { schema: pageSchema(AgencySchema, "AgencyPage") } },
    },
  },
});

const get = internalRoute(["agency_not_found"], {
  method: "get",
  path: "/internal/v1/agencies/{agency_id}",
  operationId: "getAgency",
  tags: ["Agencies"],
  summary: "Get an agency",
  request: { params: z.object({ agency_id: z.string() }) },
  responses: { 200: { description: "The agency.", content: { "application/json": { schema: AgencySchema } } } },
});

export const agenciesInternal = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(create, async (c) => {
    const body = c.req.valid("json");
    const agency = await createAgency(database(c.env.DB), {
      name: body.name,
      kind: body.kind,
      cancellationNoticeHours: body.cancellation_notice_hours,
    });
    return c.json(presentAgency(agency), 201);
  })
  .openapi(list, async (c) => {
    const { cursor, limit } = c.req.valid("query");
    const page = await pageAgencies(database(c.env.DB), { secret: c.env.SECRET_KEY, cursor, limit });
    return c.json(pageBody(page, presentAgency), 200);
  })
  .openapi(get, async (c) =>
    c.json(presentAgency(await getAgency(database(c.env.DB), c.req.valid("param").agency_id)), 200),
  );
