import { z } from "@hono/zod-openapi";

/** The `version` of every resource a client reads, and from which its ETag is built. */
export const versionField = z.number().int().min(1).openapi({
  description: 'Raised by every change a reader can see; the ETag is built from it (`"v7"` for version 7).',
  example: 7,
});
