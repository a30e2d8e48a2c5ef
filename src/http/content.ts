import type { ZodType } from "zod";

/** An OpenAPI content block of one JSON media type: `content: json(Schema)` in a route's body or response. */
export const json = <T extends ZodType>(schema: T) => ({ "application/json": { schema } }) as const;
