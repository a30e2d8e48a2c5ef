import { OpenAPIHono, z } from "@hono/zod-openapi";
import { eq, inArray } from "drizzle-orm";
import { type Db, database } from "../db/client";
import {
  type DeliveryDestination,
  type MediaDelivery,
  type MediaUpload,
  mediaDeliveries,
  mediaDeliveryFiles,
} from "../db/schema";
import { getUserById } from "../domain/hierarchy";
import { findListing } from "../domain/listings";
import type { AppEnv } from "../http/env";
import { internalRoute } from "../http/route";
import { validationHook } from "../http/validation";
import { DomainError } from "../lib/errors";
import { deliveriesOf, destinationFor, hasCandidates, prepareDelivery } from "../media/deliveries";
import { checkEndpoint, getDestination, removeDestination, saveDestination } from "../media/destinations";
import { uploadsOf } from "../media/uploads";

const DestinationSchema = z
  .object({
    user_id: z.string(),
    provider: z.literal("s3"),
    endpoint_url: z.string().openapi({ example: "https://s3.eu-west-1.amazonaws.com" }),
    bucket: z.string(),
    region: z.string(),
    addressing_style: z.enum(["path", "virtual"]),
    access_key_id: z.string(),
    path_prefix: z.string(),
    updated_at: z.string(),
  })
  .openapi("DeliveryDestination", {
    description: "An agent's S3-compatible storage. The secret access key is stored encrypted and never answered.",
  });

const presentDestination = (d: DeliveryDestination) => ({
  user_id: d.userId,
  provider: d.provider,
  endpoint_url: d.endpointUrl,
  bucket: d.bucket,
  region: d.region,
  addressing_style: d.addressingStyle,
  access_key_id: d.accessKeyId,
  path_prefix: d.pathPrefix,
  updated_at: d.updatedAt,
});

const UploadSchema = z
  .object({
    id: z.string(),
    status: z.enum(["pending", "completed", "expired"]),
    asset_type: z.string(),
    content_type: z.string(),
    size_bytes: z.number().int(),
    filename: z.string().nullable(),
    created_by_user_id: z.string(),
    expires_at: z.string(),
    completed_at: z.string().nullable(),
    created_at: z.string(),
  })
  .openapi("InternalMediaUpload");

const presentUpload = (u: MediaUpload) => ({
  id: u.id,
  status: u.status,
  asset_type: u.assetType,
  content_type: u.contentType,
  size_bytes: u.sizeBytes,
  filename: u.filename,
  created_by_user_id: u.createdByUserId,
  expires_at: u.expiresAt,
  completed_at: u.completedAt,
  created_at: u.createdAt,
});

const DeliverySchema = z
  .object({
    id: z.string(),
    status: z.enum(["queued", "delivering", "completed", "failed"]),
    trigger: z.enum(["upload", "manual"]),
    destination_user_id: z.string(),
    attempts: z.number().int(),
    files_total: z.number().int(),
    files_delivered: z.number().int(),
    files_failed: z.number().int(),
    error: z.string().nullable(),
    files: z.array(
      z.object({
        upload_id: z.string(),
        status: z.enum(["pending", "delivered", "failed"]),
        error: z.string().nullable(),
      }),
    ),
    created_at: z.string(),
    finished_at: z.string().nullable(),
  })
  .openapi("MediaDelivery");

async function presentDeliveries(db: Db, rows: MediaDelivery[]) {
  const files = rows.length
    ? await db
        .select()
        .from(mediaDeliveryFiles)
        .where(
          inArray(
            mediaDeliveryFiles.deliveryId,
            rows.map((d) => d.id),
          ),
        )
        .all()
    : [];
  return rows.map((d) => ({
    id: d.id,
    status: d.status,
    trigger: d.trigger,
    destination_user_id: d.destinationUserId,
    attempts: d.attempts,
    files_total: d.filesTotal,
    files_delivered: d.filesDelivered,
    files_failed: d.filesFailed,
    error: d.error,
    files: files
      .filter((f) => f.deliveryId === d.id)
      .map((f) => ({ upload_id: f.uploadId, status: f.status, error: f.error })),
    created_at: d.createdAt,
    finished_at: d.finishedAt,
  }));
}

const userParams = z.object({ user_id: z.string() });
const listingParams = z.object({ agency_id: z.string(), listing_number: z.string() });
const destinationPath = "/internal/v1/users/{user_id}/delivery-destination";

const setDestination = internalRoute(["user_not_found", "invalid_delivery_destination"], {
  method: "put",
  path: destinationPath,
  operationId: "setDeliveryDestination",
  tags: ["Media"],
  summary: "Set an agent's cloud storage for media delivery (S3-compatible: AWS S3, R2, Backblaze B2, Wasabi, MinIO)",
  description:
    "Replaces any earlier destination of the user. The secret access key is encrypted at rest and never answered. Files land at `<path_prefix>/<listing_number>/<asset_type>/<filename>`.",
  request: {
    params: userParams,
    body: {
      content: {
        "application/json": {
          schema: z.strictObject({
            endpoint_url: z.url().openapi({
              description:
                "The S3 endpoint, e.g. `https://<account>.r2.cloudflarestorage.com`, `https://s3.eu-west-1.amazonaws.com`, `https://s3.us-west-004.backblazeb2.com`.",
            }),
            bucket: z
              .string()
              .min(3)
              .max(63)
              .regex(/^[a-z0-9][a-z0-9.-]+[a-z0-9]$/),
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
              .regex(/^[^\p{Cc}\\]*$/u)
              .default("")
              .openapi({ description: "Folder inside the bucket.", example: "listings" }),
          }),
        },
      },
    },
  },
  responses: {
    200: { description: "The destination.", content: { "application/json": { schema: DestinationSchema } } },
  },
});

const readDestination = internalRoute(["user_not_found", "delivery_destination_not_found"], {
  method: "get",
  path: destinationPath,
  operationId: "getDeliveryDestination",
  tags: ["Media"],
  summary: "Read an agent's delivery destination (without its secret)",
  request: { params: userParams },
  responses: {
    200: { description: "The destination.", content: { "application/json": { schema: DestinationSchema } } },
  },
});

const deleteDestination = internalRoute(["user_not_found", "delivery_destination_not_found"], {
  method: "delete",
  path: destinationPath,
  operationId: "removeDeliveryDestination",
  tags: ["Media"],
  summary: "Remove an agent's delivery destination",
  request: { params: userParams },
  responses: { 204: { description: "Removed." } },
});

const listingMedia = internalRoute(["listing_not_found"], {
  method: "get",
  path: "/internal/v1/agencies/{agency_id}/listings/{listing_number}/media",
  operationId: "listListingMedia",
  tags: ["Media"],
  summary: "A listing's uploads and deliveries",
  request: { params: listingParams },
  responses: {
    200: {
      description: "Uploads (oldest first) and deliveries (newest first).",
      content: {
        "application/json": {
          schema: z.object({ uploads: z.array(UploadSchema), deliveries: z.array(DeliverySchema) }),
        },
      },
    },
  },
});

const redeliver = internalRoute(
  ["listing_not_found", "delivery_destination_not_found", "nothing_to_deliver", "queue_unavailable"],
  {
    method: "post",
    path: "/internal/v1/agencies/{agency_id}/listings/{listing_number}/media/deliveries",
    operationId: "deliverListingMedia",
    tags: ["Media"],
    summary: "Deliver a listing's media again",
    description:
      "Queues a delivery to the agent's storage. `scope` `all` (default) sends every completed upload again; `undelivered` only those not delivered yet. Ends in `media.delivery.completed` or `media.delivery.failed`.",
    request: {
      params: listingParams,
      body: {
        content: {
          "application/json": { schema: z.strictObject({ scope: z.enum(["all", "undelivered"]).default("all") }) },
        },
      },
    },
    responses: {
      202: { description: "The queued delivery.", content: { "application/json": { schema: DeliverySchema } } },
    },
  },
);

export const mediaInternal = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(setDestination, async (c) => {
    const db = database(c.env.DB);
    const user = await getUserById(db, c.req.valid("param").user_id);
    const b = c.req.valid("json");
    checkEndpoint(b.endpoint_url, { allowLocalHttp: c.env.ALLOW_HTTP_RECEIVERS === "true" });
    const saved = await saveDestination(db, c.env.SECRET_KEY, user, {
      endpointUrl: b.endpoint_url,
      bucket: b.bucket,
      region: b.region,
      addressingStyle: b.addressing_style,
      accessKeyId: b.access_key_id,
      secretAccessKey: b.secret_access_key,
      pathPrefix: b.path_prefix,
    });
    return c.json(presentDestination(saved), 200);
  })
  .openapi(readDestination, async (c) => {
    const db = database(c.env.DB);
    return c.json(
      presentDestination(await getDestination(db, await getUserById(db, c.req.valid("param").user_id))),
      200,
    );
  })
  .openapi(deleteDestination, async (c) => {
    const db = database(c.env.DB);
    await removeDestination(db, await getUserById(db, c.req.valid("param").user_id));
    return c.body(null, 204);
  })
  .openapi(listingMedia, async (c) => {
    const db = database(c.env.DB);
    const p = c.req.valid("param");
    const listing = await findListing(db, p.agency_id, p.listing_number);
    const [uploads, deliveries] = await Promise.all([uploadsOf(db, listing.id), deliveriesOf(db, listing.id)]);
    return c.json({ uploads: uploads.map(presentUpload), deliveries: await presentDeliveries(db, deliveries) }, 200);
  })
  .openapi(redeliver, async (c) => {
    const db = database(c.env.DB);
    const p = c.req.valid("param");
    const { scope } = c.req.valid("json");
    const listing = await findListing(db, p.agency_id, p.listing_number);
    if (!(await destinationFor(db, listing)))
      throw new DomainError("delivery_destination_not_found", {
        details: { agent_ids: [listing.agentOneId, listing.agentTwoId].filter(Boolean) },
      });
    if (!(await hasCandidates(db, listing.id, scope)))
      throw new DomainError("nothing_to_deliver", { details: { scope } });
    const prepared = await prepareDelivery(c.env, db, listing, "manual", scope);
    if (!prepared) throw new DomainError("delivery_destination_not_found");
    const [first, ...rest] = prepared.statements;
    await db.batch([first!, ...rest]);
    const row = await db.select().from(mediaDeliveries).where(eq(mediaDeliveries.id, prepared.deliveryId)).get();
    // Another trigger claimed the files between the check and the batch.
    if (!row) throw new DomainError("nothing_to_deliver", { details: { scope } });
    const [presented] = await presentDeliveries(db, [row]);
    return c.json(presented!, 202);
  });
