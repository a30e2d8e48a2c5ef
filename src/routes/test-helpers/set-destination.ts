import { type RouteHandler, z } from "@hono/zod-openapi";
import { activeUserOfAgency } from "../../domain/people/users";
import type { AppEnv } from "../../http/env";
import { json, publicRoute } from "../../http/route";
import { keyringOf } from "../../lib/crypto/keyring";
import { SANDBOX_BEHAVIOURS, SANDBOX_DELIVERY_PREFIX, saveSandboxDestination } from "../../media/sandbox";
import { helperGuard, TEST_HELPERS_TAG, userIdParam } from "./schema";

const SandboxDestinationSchema = z.object({
  user_id: z.string().openapi({ example: "usr_0mhx3k2a1q8v2l0c9z7rj4" }),
  behaviour: z.enum(SANDBOX_BEHAVIOURS).openapi({ example: "accept" }),
  path_prefix: z.string().openapi({ example: "listings" }),
});

export const setDestinationRoute = publicRoute(helperGuard("media:write", ["user_not_found"]), {
  method: "post",
  path: "/api/v1/test_helpers/users/{user_id}/delivery_destination",
  operationId: "testHelperSetDeliveryDestination",
  tags: [TEST_HELPERS_TAG],
  summary: "Give an agent sandbox storage for media delivery",
  description:
    "What an agent does in the dashboard when they configure their cloud storage, with the sandbox's own storage " +
    "in place of an S3 bucket; it replaces any destination the user had. A listing's media goes to its first " +
    "agent's storage, else its second agent's; a listing whose agents have none is not delivered at all (no " +
    `event). With \`behaviour\` \`accept\`, delivered files are stored under \`${SANDBOX_DELIVERY_PREFIX}/` +
    "<agency_id>/<path_prefix>/<listing_number>/<asset_type>/<filename>` in the service's own bucket and the " +
    "delivery emits `media.delivery.completed`; with `refuse`, the storage answers like a bucket that denies " +
    "access, a permanent failure, so the delivery emits `media.delivery.failed` after its first attempt.",
  request: {
    params: userIdParam,
    body: {
      content: json(
        z.strictObject({
          behaviour: z
            .enum(SANDBOX_BEHAVIOURS)
            .default("accept")
            .openapi({ description: "`accept` (default) or `refuse` every file.", example: "accept" }),
          path_prefix: z
            .string()
            .max(200)
            // biome-ignore lint/suspicious/noControlCharactersInRegex: a folder name must not hold control characters.
            .regex(/^[^\x00-\x1f\\]*$/, "text without backslashes or control characters")
            .default("")
            .openapi({ description: "Folder inside the storage.", example: "listings" }),
        }),
      ),
    },
  },
  responses: { 200: { description: "The destination.", content: json(SandboxDestinationSchema) } },
});

// Setting the same destination again changes nothing, so a repeat after a lost answer does no harm.
export const setDestinationHandler: RouteHandler<typeof setDestinationRoute, AppEnv> = async (c) => {
  const db = c.var.db;
  const b = c.req.valid("json");
  const user = await activeUserOfAgency(db, c.get("caller").agencyId, c.req.valid("param").user_id);
  const saved = await saveSandboxDestination(db, keyringOf(c.env), user, {
    behaviour: b.behaviour,
    pathPrefix: b.path_prefix,
  });
  return c.json(
    SandboxDestinationSchema.parse({ user_id: saved.userId, behaviour: b.behaviour, path_prefix: saved.pathPrefix }),
    200,
  );
};
