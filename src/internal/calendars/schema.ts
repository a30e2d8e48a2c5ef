import { z } from "@hono/zod-openapi";

export const userParam = z.object({ user_id: z.string() });
