import type { EventRow } from "../../db/schema";

/** What an event tells a copy kept in sync: its place in the agency's sequence, and the resource it changed. */
export interface SyncFields {
  sequence: number;
  resource: { type: string; id: string; version: number } | null;
}

/**
 * An event's sync fields as stored: the sequence (set by the trigger that inserted it) and
 * the resource with the version the change gave it, or null for an event about none.
 */
export function syncFields(
  e: Pick<EventRow, "sequence" | "resourceType" | "resourceId" | "resourceVersion">,
): SyncFields {
  const { resourceType: type, resourceId: id, resourceVersion: version } = e;
  return {
    sequence: e.sequence ?? 0,
    resource: type !== null && id !== null && version !== null ? { type, id, version } : null,
  };
}
