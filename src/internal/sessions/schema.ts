import { z } from "@hono/zod-openapi";

export const userIdParam = z.object({
  user_id: z.string().openapi({ description: "The user.", example: "usr_0mhx3k2a1q8v2l0c9z7rj4" }),
});
