import { z } from "@hono/zod-openapi";
import type { User } from "../../db/schema";
import { json } from "../../http/route";
import { presentUser, UserSchema } from "../../schemas/users";

export const InternalUserSchema = UserSchema.extend({
  agency_id: z.string().openapi({ example: "agy_0mhx3k2a1q8v2l0c9z7rj4" }),
}).openapi("InternalUser");

export const presentInternalUser = (u: User) => ({ ...presentUser(u), agency_id: u.agencyId });

export const userResponse = (description: string, status: 200 | 201 = 200) =>
  ({ [status]: { description, content: json(InternalUserSchema) } }) as const;

export const userParam = z.object({ user_id: z.string() });
