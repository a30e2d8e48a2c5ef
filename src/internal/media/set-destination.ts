import { type RouteHandler, z } from "@hono/zod-openapi";
import { getUserById } from "../../domain/people/hierarchy";
import type { AppEnv } from "../../http/env";
import { internalRoute, json } from "../../http/route";
import { keyringOf } from "../../lib/crypto/keyring";
import { checkEndpoint, saveDestination } from "../../media/delivery/destinations";
import { DestinationSchema, destinationPath, presentDestination, userParams } from "./schema";

export const setDeliveryDestinationRoute = internalRoute(["user_not_found", "invalid_delivery_destination"], {
  method: "put",
  path: destinationPath,
  operationId: "setDeliveryDestination",
  tags: ["Media"],
  summary: "Set an agent's cloud storage for media delivery (S3-compatible: AWS S3, R2, Backblaze B2, Wasabi, MinIO)",
  description:
    "Replaces any earlier destination of the user. The secret access key is encrypted at rest and never answered. " +
    "Files land at `<path_prefix>/<listing_number>/<asset_type>/<filename>`. The destination belongs to the user's " +
    "agency: it is removed when the user moves to another agency.",
  request: {
    params: userParams,
    body: {
      content: json(
        z.strictObject({
          endpoint_url: z.url().openapi({
            description:
              "The S3 endpoint, e.g. `https://<account>.r2.cloudflarestorage.com`, " +
              "`https://s3.eu-west-1.amazonaws.com`, `https://s3.us-west-004.backblazeb2.com`.",
          }),
          bucket: z
            .string()
            .min(3)
            .max(63)
            .regex(
              /^[a-z0-9][a-z0-9.-]+[a-z0-9]$/,
              "lowercase letters, digits, dots and hyphens, starting and ending with a letter or digit",
            ),
          region: z.string().min(1).max(40).openapi({
            description: "The SigV4 region: `auto` for R2, the bucket's region elsewhere.",
            example: "auto",
          }),
          addressing_style: z
            .enum(["path", "virtual"])
            .default("path")
            .openapi({ description: "`path` (endpoint/bucket/key) or `virtual` (bucket.endpoint/key)." }),
          access_key_id: z.string().min(1).max(128),
          secret_access_key: z.string().min(1).max(256),
          path_prefix: z
            .string()
            .max(200)
            // biome-ignore lint/suspicious/noControlCharactersInRegex: no control characters in a folder name.
            .regex(/^[^\x00-\x1f\\]*$/, "text without backslashes or control characters")
            .default("")
            .openapi({ description: "Folder inside the bucket.", example: "listings" }),
        }),
      ),
    },
  },
  responses: {
    200: { description: "The destination.", content: json(DestinationSchema) },
  },
});

export const setDeliveryDestinationHandler: RouteHandler<typeof setDeliveryDestinationRoute, AppEnv> = async (c) => {
  const db = c.var.db;
  const user = await getUserById(db, c.req.valid("param").user_id);
  const b = c.req.valid("json");
  checkEndpoint(b.endpoint_url, { allowLocalHttp: c.env.ALLOW_HTTP_RECEIVERS === "true" });
  const saved = await saveDestination(db, keyringOf(c.env), user, {
    endpointUrl: b.endpoint_url,
    bucket: b.bucket,
    region: b.region,
    addressingStyle: b.addressing_style,
    accessKeyId: b.access_key_id,
    secretAccessKey: b.secret_access_key,
    pathPrefix: b.path_prefix,
  });
  return c.json(presentDestination(saved), 200);
};
