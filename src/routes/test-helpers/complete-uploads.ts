import { type RouteHandler, z } from "@hono/zod-openapi";
import { findListing } from "../../domain/listings/reads";
import type { AppEnv } from "../../http/env";
import { json, publicRoute } from "../../http/route";
import { COMPLETE_UPLOADS_LIMIT, completePendingUploads } from "../../media/sandbox";
import { listingNumberParam } from "../../schemas/listings";
import { helperGuard, TEST_HELPERS_TAG } from "./schema";

const CompletedUploadsSchema = z.object({
  listing_number: z.string().openapi({ example: "k3v9x2a" }),
  completed_upload_ids: z.array(z.string()).openapi({ example: ["upl_0mhx3k2a1q8v2l0c9z7rj4"] }),
  delivery_id: z
    .string()
    .nullable()
    .openapi({
      description:
        "The delivery the last completed upload started; null when the listing's agents have no storage " +
        "(then nothing is delivered and no media event follows).",
      example: "dlv_0mhx3k2a1q8v2l0c9z7rj4",
    }),
  more_pending: z.boolean().openapi({ description: "True when more uploads wait for another call.", example: false }),
});

export const completeUploadsRoute = publicRoute(
  helperGuard("media:write", ["listing_not_found", "no_pending_uploads", "queue_unavailable"]),
  {
    method: "post",
    path: "/api/v1/test_helpers/listings/{listing_number}/uploads/complete",
    operationId: "testHelperCompleteUploads",
    tags: [TEST_HELPERS_TAG],
    summary: "Complete a listing's pending uploads (starts the media delivery)",
    description:
      "What happens when the files of uploads requested with `POST /api/v1/media/upload` (with this " +
      "`listing_number`) arrive: each pending upload whose URL is still valid gets a small placeholder object in " +
      "place of its bytes (bytes that did arrive are kept) and completes through the same path as the upload PUT. " +
      "When the last one completes, the listing's new files are delivered to its agent's storage by the media " +
      "queue, which emits `media.delivery.completed` or `media.delivery.failed` within seconds; see " +
      "`POST /api/v1/test_helpers/users/{user_id}/delivery_destination`. No pending upload is 409 " +
      `\`no_pending_uploads\`. At most ${COMPLETE_UPLOADS_LIMIT} uploads, oldest first, complete per call.`,
    request: { params: listingNumberParam },
    responses: { 200: { description: "The completed uploads.", content: json(CompletedUploadsSchema) } },
  },
);

// Running it again completes only what is still pending, so a repeat after a lost answer does no harm.
export const completeUploadsHandler: RouteHandler<typeof completeUploadsRoute, AppEnv> = async (c) => {
  const db = c.var.db;
  const listing = await findListing(db, c.get("caller").agencyId, c.req.valid("param").listing_number);
  const done = await completePendingUploads(db, c.env, listing);
  return c.json(
    CompletedUploadsSchema.parse({
      listing_number: listing.listingNumber,
      completed_upload_ids: done.completed,
      delivery_id: done.deliveryId,
      more_pending: done.morePending,
    }),
    200,
  );
};
