import { type RouteHandler, z } from "@hono/zod-openapi";
import { MAX_TOUR_PAGE_DEPTH, MAX_TOUR_SEARCH, MIN_TOUR_SEARCH, pageTours, TOUR_STATUSES } from "../../domain/tours";
import type { AppEnv } from "../../http/env";
import { json, publicRoute } from "../../http/route";
import { presentSummary, TourSummarySchema } from "../../schemas/tours";

const TourPageSchema = z
  .object({
    tours: z.array(TourSummarySchema),
    total: z.number().int().openapi({ description: "Tours matching the filters.", example: 42 }),
    page: z.number().int().openapi({ example: 1 }),
    pages: z
      .number()
      .int()
      .openapi({ description: "Number of pages at this limit (0 when nothing matches).", example: 3 }),
  })
  .openapi("TourPage");

export const listToursRoute = publicRoute(
  { endpoint: "read_tours_list", scope: "tours:read" },
  {
    method: "get",
    path: "/api/v1/tours",
    operationId: "listTours",
    tags: ["Tours"],
    summary: "List your agency's tours",
    description:
      "A numbered page of tours, newest first. `search` matches part of the address, case-insensitively. " +
      "`total` is exact at the moment of the read; its cost does not grow with the agency's size " +
      "(with `search`, it grows with the number of addresses sharing the term's rarest 3 characters). " +
      `A page reaches at most ${MAX_TOUR_PAGE_DEPTH.toLocaleString("en-US")} rows deep: \`page\` × \`limit\` above ` +
      `${MAX_TOUR_PAGE_DEPTH} is 422 \`request_query_invalid\` (narrow the list with \`status\` or \`search\`).`,
    request: {
      query: z.strictObject({
        page: z.coerce
          .number()
          .int()
          .min(1)
          .max(10_000)
          .default(1)
          .openapi({
            description: `Page number, from 1; \`page\` × \`limit\` is at most ${MAX_TOUR_PAGE_DEPTH}.`,
            example: 1,
          }),
        limit: z.coerce
          .number()
          .int()
          .min(1)
          .max(100)
          .default(20)
          .openapi({ description: "Page size, 1 to 100 (default 20).", example: 20 }),
        status: z.enum(TOUR_STATUSES).optional(),
        search: z
          .string()
          .min(MIN_TOUR_SEARCH)
          .max(MAX_TOUR_SEARCH)
          .optional()
          .openapi({
            description:
              `Part of the address, matched literally (\`%\` and \`_\` are plain characters) and ` +
              `case-insensitively for ASCII letters; ${MIN_TOUR_SEARCH} to ${MAX_TOUR_SEARCH} characters ` +
              `(a shorter term is 422 \`request_query_invalid\`).`,
            example: "harbour",
          }),
      }),
    },
    responses: {
      200: { description: "A page of tours.", content: json(TourPageSchema) },
    },
  },
);

export const listTours: RouteHandler<typeof listToursRoute, AppEnv> = async (c) => {
  const q = c.req.valid("query");
  const { rows, total } = await pageTours(c.var.db, c.get("caller").agencyId, q);
  return c.json(
    TourPageSchema.parse({ tours: rows.map(presentSummary), total, page: q.page, pages: Math.ceil(total / q.limit) }),
    200,
  );
};
