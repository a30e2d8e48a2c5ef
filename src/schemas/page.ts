import { z } from "@hono/zod-openapi";
import type { Page } from "../db/pages";

const DEFAULT_PAGE_SIZE = 50;
const MAX_PAGE_SIZE = 200;

/** The query of every cursor list. */
export const cursorQuery = {
  cursor: z
    .string()
    .max(512)
    .optional()
    .openapi({
      description:
        "Opaque cursor from a previous page's `next_cursor`. Omit for the first page. " +
        "A cursor is bound to the list (and filters) it was minted for.",
      example: "eyJsIjoidXNlcnMiLCJrIjpbIjIwMjYtMTEtMjJUMTI6MDA6MDAuMDAwWiIsInVzcl8xIl19.Jx2Xb3sQ",
    }),
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(MAX_PAGE_SIZE)
    .default(DEFAULT_PAGE_SIZE)
    .openapi({ description: "Page size, 1 to 200.", example: 50 }),
};

export function pageSchema<T extends z.ZodType>(item: T, name: string) {
  return z
    .object({
      data: z.array(item).openapi({ description: "The items of this page, oldest first." }),
      next_cursor: z
        .string()
        .openapi({ description: "Cursor of the next page; the empty string marks the end.", example: "" }),
    })
    .openapi(name);
}

/** A page as the wire shows it: `{ data, next_cursor }`. */
export function pageBody<Row, Item>(page: Page<Row>, present: (row: Row) => Item) {
  return { data: page.rows.map(present), next_cursor: page.nextCursor };
}
