import { z } from "@hono/zod-openapi";
import type { User } from "../db/schema";
import { ROLES } from "../domain/roles";
import { versionField } from "./version";

export const UserSchema = z
  .object({
    id: z
      .string()
      .openapi({ description: "The user's id (`user_id` in paths).", example: "usr_0mhx3k2a1q8v2l0c9z7rj4" }),
    name: z.string().openapi({ example: "Dana Whitfield" }),
    email: z.string().openapi({ example: "dana@harbourmedia.example" }),
    role: z.enum(ROLES).openapi({ description: "Role inside the agency hierarchy.", example: "agent" }),
    managerId: z.string().nullable().openapi({
      description: "The user's manager; null at the top of the hierarchy. A change emits `user.hierarchy_changed`.",
      example: "usr_0mhx3k2a0w1e2r3t4y5u6i",
    }),
    is_active: z
      .boolean()
      .openapi({ description: "False once the user was deactivated or suspended in the dashboard.", example: true }),
    created_at: z.string().openapi({ description: "ISO 8601 UTC.", example: "2026-11-22T12:00:00.000Z" }),
    updated_at: z.string().openapi({ description: "ISO 8601 UTC.", example: "2026-11-22T12:00:00.000Z" }),
    version: versionField,
  })
  .openapi("User");

export type UserBody = z.infer<typeof UserSchema>;

export const presentUser = (u: User): UserBody => ({
  id: u.id,
  name: u.name,
  email: u.email,
  role: u.role as UserBody["role"],
  managerId: u.managerId,
  is_active: u.isActive,
  created_at: u.createdAt,
  updated_at: u.updatedAt,
  version: u.version,
});
