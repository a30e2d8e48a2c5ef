import { and, asc, eq, lt, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { mediaUploadParts } from "../../db/schema";
import { nowIso } from "../../lib/ids";
import type { StoredPart } from "./s3-list-parts";

/** A claim older than this was left by a request that died: a part streams well within it. */
const STALE_CLAIM_MS = 30 * 60_000;

/**
 * Claims part `n` of an upload for one request on the service's upload path: true when
 * this request may store it. A stored part, or one another request is receiving, is not
 * claimed again; a stale claim is taken over.
 */
export async function claimPart(db: Db, uploadId: string, partNumber: number, sizeBytes: number, now = Date.now()) {
  const stamp = nowIso(now);
  const result = await db
    .insert(mediaUploadParts)
    .values({ uploadId, partNumber, status: "receiving", sizeBytes, claimedAt: stamp })
    .onConflictDoUpdate({
      target: [mediaUploadParts.uploadId, mediaUploadParts.partNumber],
      set: { claimedAt: stamp },
      setWhere: and(
        eq(mediaUploadParts.status, "receiving"),
        lt(mediaUploadParts.claimedAt, nowIso(now - STALE_CLAIM_MS)),
      ),
    })
    .run();
  return result.meta.changes === 1;
}

/** Records a claimed part as stored, with R2's ETag. */
export const storePart = (db: Db, uploadId: string, partNumber: number, etag: string) =>
  db
    .update(mediaUploadParts)
    .set({ status: "stored", etag })
    .where(and(eq(mediaUploadParts.uploadId, uploadId), eq(mediaUploadParts.partNumber, partNumber)))
    .run();

/** Gives a claim back after its bytes failed, so the part can be sent again. */
export const releasePart = (db: Db, uploadId: string, partNumber: number) =>
  db
    .delete(mediaUploadParts)
    .where(
      and(
        eq(mediaUploadParts.uploadId, uploadId),
        eq(mediaUploadParts.partNumber, partNumber),
        eq(mediaUploadParts.status, "receiving"),
      ),
    )
    .run();

/** The parts stored on the service's upload path, by part number; at most the upload's part count. */
export async function localStoredParts(db: Db, uploadId: string): Promise<StoredPart[]> {
  const rows = await db
    .select({
      partNumber: mediaUploadParts.partNumber,
      sizeBytes: mediaUploadParts.sizeBytes,
      etag: sql<string>`${mediaUploadParts.etag}`,
    })
    .from(mediaUploadParts)
    .where(and(eq(mediaUploadParts.uploadId, uploadId), eq(mediaUploadParts.status, "stored")))
    .orderBy(asc(mediaUploadParts.partNumber))
    .all();
  return rows;
}
