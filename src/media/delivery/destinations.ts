import { and, eq } from "drizzle-orm";
import type { Db } from "../../db/client";
import { type DeliveryDestination, deliveryDestinations, type MediaDelivery, type User } from "../../db/schema";
import { seal, storageCredentials, unseal } from "../../domain/sealed-columns";
import type { Keyring } from "../../lib/crypto/keyring";
import { DomainError } from "../../lib/errors";
import { nowIso } from "../../lib/ids";
import { checkOutboundUrl, type OutboundPolicy } from "../../lib/outbound-url";
import type { S3Destination } from "./s3-put";

/** A destination's sealed secret opens only for that agent's own destination row. */
const boundRow = (row: Pick<DeliveryDestination, "agencyId" | "userId">) => ({
  agencyId: row.agencyId,
  boundId: row.userId,
});

interface DestinationInput {
  endpointUrl: string;
  bucket: string;
  region: string;
  addressingStyle: "path" | "virtual";
  accessKeyId: string;
  secretAccessKey: string;
  pathPrefix: string;
}

/**
 * Storage endpoints pass the same outbound policy as webhook receivers: https to a
 * public host (plain http to this machine only where the environment allows it, as local
 * development does for a MinIO beside `wrangler dev`), and no query, fragment or
 * credentials. The delivery checks the object URL again before every PUT.
 */
export function checkEndpoint(endpointUrl: string, policy: OutboundPolicy) {
  const verdict = checkOutboundUrl(endpointUrl, policy);
  const url = verdict.ok ? new URL(verdict.url) : undefined;
  if (!verdict.ok || url?.search || url?.hash) {
    const reason = verdict.ok ? "must not carry a query or fragment" : verdict.reason;
    throw new DomainError("invalid_delivery_destination", {
      message: `endpoint_url ${reason}.`,
      details: { field: "endpoint_url", reason },
    });
  }
}

/** Sets an agent's destination, replacing any earlier one; the secret is sealed before it is stored. */
export async function saveDestination(
  db: Db,
  keyring: Keyring,
  user: User,
  input: DestinationInput,
): Promise<DeliveryDestination> {
  const values = {
    agencyId: user.agencyId,
    provider: "s3" as const,
    endpointUrl: input.endpointUrl.replace(/\/+$/, ""),
    bucket: input.bucket,
    region: input.region,
    addressingStyle: input.addressingStyle,
    accessKeyId: input.accessKeyId,
    secretAccessKeySealed: await seal(
      keyring,
      storageCredentials,
      boundRow({ agencyId: user.agencyId, userId: user.id }),
      input.secretAccessKey,
    ),
    pathPrefix: input.pathPrefix.replace(/^\/+|\/+$/g, ""),
    updatedAt: nowIso(),
  };
  const [row] = await db
    .insert(deliveryDestinations)
    .values({ userId: user.id, ...values })
    .onConflictDoUpdate({ target: deliveryDestinations.userId, set: values })
    .returning();
  return row!;
}

export async function getDestination(db: Db, user: User): Promise<DeliveryDestination> {
  const row = await db
    .select()
    .from(deliveryDestinations)
    .where(and(eq(deliveryDestinations.userId, user.id), eq(deliveryDestinations.agencyId, user.agencyId)))
    .get();
  if (!row) throw new DomainError("delivery_destination_not_found");
  return row;
}

export async function removeDestination(db: Db, user: User): Promise<void> {
  const gone = await db
    .delete(deliveryDestinations)
    .where(eq(deliveryDestinations.userId, user.id))
    .returning({ userId: deliveryDestinations.userId });
  if (!gone.length) throw new DomainError("delivery_destination_not_found");
}

/**
 * A delivery's destination with its secret unsealed, read when the delivery runs (so a changed
 * destination applies).
 */
export async function openDestination(
  db: Db,
  keyring: Keyring,
  delivery: Pick<MediaDelivery, "destinationUserId" | "agencyId">,
): Promise<(S3Destination & { pathPrefix: string }) | undefined> {
  const row = await db
    .select()
    .from(deliveryDestinations)
    .where(
      and(
        eq(deliveryDestinations.userId, delivery.destinationUserId),
        eq(deliveryDestinations.agencyId, delivery.agencyId),
      ),
    )
    .get();
  if (!row) return undefined;
  return {
    ...row,
    secretAccessKey: await unseal(keyring, storageCredentials, boundRow(row), row.secretAccessKeySealed),
  };
}
