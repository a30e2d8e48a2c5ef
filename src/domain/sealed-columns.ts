import type { SQLiteColumn, SQLiteTable } from "drizzle-orm/sqlite-core";
import { calendarConnections, deliveryDestinations, webhookEndpoints } from "../db/schema";
import { decrypt, encrypt, rowBinding } from "../lib/crypto/crypto";
import type { Keyring } from "../lib/crypto/keyring";

/**
 * A column stored sealed (AES-GCM under the keyring), bound to its row: the agency and one
 * more id, so a ciphertext copied to another row does not open. What seals a column, what
 * opens it and the re-seal job all read the purpose and binding from here.
 */
export interface SealedColumn {
  /** The table's name, the first part of the binding. */
  name: string;
  /** The key purpose (the HKDF info of the column's key). */
  purpose: string;
  table: SQLiteTable;
  /** The primary key: the re-seal job pages by it. */
  id: SQLiteColumn;
  agencyId: SQLiteColumn;
  /** The id after the agency in the binding. */
  boundId: SQLiteColumn;
  sealed: SQLiteColumn;
}

/** A webhook endpoint's signing secret opens only for its own endpoint of its own agency. */
export const webhookSigningSecret = {
  name: "webhook_endpoints",
  purpose: "webhook-signing-secret",
  table: webhookEndpoints,
  id: webhookEndpoints.id,
  agencyId: webhookEndpoints.agencyId,
  boundId: webhookEndpoints.id,
  sealed: webhookEndpoints.secretSealed,
} satisfies SealedColumn;

/** Calendar credentials open only for the connection of that user (one per user) in that agency. */
export const calendarCredentials = {
  name: "calendar_connections",
  purpose: "calendar-credentials",
  table: calendarConnections,
  id: calendarConnections.id,
  agencyId: calendarConnections.agencyId,
  boundId: calendarConnections.userId,
  sealed: calendarConnections.credentialsSealed,
} satisfies SealedColumn;

/** A destination's storage secret opens only for that agent's own destination row. */
export const storageCredentials = {
  name: "delivery_destinations",
  purpose: "storage-credentials",
  table: deliveryDestinations,
  id: deliveryDestinations.userId,
  agencyId: deliveryDestinations.agencyId,
  boundId: deliveryDestinations.userId,
  sealed: deliveryDestinations.secretAccessKeySealed,
} satisfies SealedColumn;

/** The row a sealed value belongs to: its agency and its bound id. */
export interface SealedRow {
  agencyId: string;
  boundId: string;
}

const bindingOf = (column: SealedColumn, row: SealedRow) => rowBinding(column.name, row.agencyId, row.boundId);

/** Seals `plaintext` for `row` under the ring's newest key. */
export const seal = (keyring: Keyring, column: SealedColumn, row: SealedRow, plaintext: string) =>
  encrypt(keyring, column.purpose, plaintext, bindingOf(column, row));

/** Opens what `seal` sealed for `row` under any key of the ring; anything else throws a SealError. */
export const unseal = (keyring: Keyring, column: SealedColumn, row: SealedRow, sealed: string) =>
  decrypt(keyring, column.purpose, sealed, bindingOf(column, row));
