import { type RouteHandler, z } from "@hono/zod-openapi";
import { checkEventTypesReadable, readableEventTypes } from "../../domain/events/access";
import { EVENT_TYPE_NAMES } from "../../domain/events/catalog";
import { lastSequence, pageFeed, visibleLast } from "../../domain/events/feed";
import { EVENT_RETENTION_DAYS, eventWindow, pageEvents } from "../../domain/events/log";
import type { AppEnv } from "../../http/env";
import { json, publicRoute } from "../../http/route";
import { queryRule } from "../../http/validation";
import { keyringOf } from "../../lib/crypto/keyring";
import { afterSequenceQuery, EventPageSchema, presentEvent } from "../../schemas/event-log";
import { READ_SCOPES_TEXT } from "../../schemas/events";
import { cursorQuery, pageBody } from "../../schemas/page";

const instant = (description: string) =>
  z.iso
    .datetime({ offset: true })
    .optional()
    .openapi({
      description: `${description} An ISO 8601 instant with \`Z\` or an offset.`,
      example: "2026-11-22T00:00:00Z",
    });

/**
 * The rules that tie the query's fields together. The feed is in sequence order and its end is
 * `last_sequence`: a time window would cut holes in it that the reader could not tell from missed
 * events, so the two do not combine. A window's end comes after its start.
 */
function windowRules(query: { created_after?: string; created_before?: string; after_sequence?: number }) {
  const { created_after: after, created_before: before } = query;
  if (query.after_sequence !== undefined) {
    const field = after !== undefined ? "created_after" : "created_before";
    if (query[field] === undefined) return [];
    const message = "Not allowed together with after_sequence.";
    return [queryRule(field, "validation_unknown_field", message, { conflicts_with: "after_sequence" })];
  }
  const window = eventWindow(after, before);
  if (
    window.createdAfter !== undefined &&
    window.createdBefore !== undefined &&
    window.createdBefore <= window.createdAfter
  )
    return [
      queryRule("created_before", "validation_out_of_range", "Must be later than created_after.", {
        minimum: window.createdAfter,
        inclusive: false,
      }),
    ];
  return [];
}

export const listEventsRoute = publicRoute(
  { endpoint: "read_events_list", scope: "webhooks:read", errors: ["event_sequence_expired"] },
  {
    method: "get",
    path: "/api/v1/events",
    operationId: "listEvents",
    tags: ["Events"],
    summary: "List your agency's events",
    description:
      `A cursor page of your agency's events of the last ${EVENT_RETENTION_DAYS} days, oldest first, whether or not ` +
      "an endpoint was subscribed to them: reconcile what your receivers got (by `event_id`) and fetch what they " +
      "missed. Only the types your key may read are listed: each needs the scope that guards its data elsewhere, " +
      `${READ_SCOPES_TEXT} (the catalog names each type's \`read_scope\`); a \`type\` your key may not read is ` +
      "403 `auth.scope_denied` naming the missing scope. Each item is the envelope its webhook deliveries carry, " +
      "with the event's `created_at` in place of " +
      `the per-attempt \`timestamp\` and \`nonce\`. Events older than ${EVENT_RETENTION_DAYS} days are not ` +
      "listed (a `created_after` before that starts at the horizon) and are deleted. A `type` that is not one of " +
      "the catalog's event types, a malformed instant, or a `created_before` not later than `created_after` is " +
      "422 `request_query_invalid`.\n\n" +
      "**The sync feed.** With `after_sequence=N` the list is your agency's events whose `sequence` is above N, in " +
      "sequence order, up to `last_sequence` (see its description): a receiver " +
      "that sees sequence 41 after 39 asks `after_sequence=39` and gets 40 first. Types your key may not read, and " +
      "other types when `type` is given, are left out; a reader that followed `next_cursor` to the end has seen " +
      "every event up to `last_sequence` that it may read, and continues with `after_sequence=<last_sequence>`. " +
      "N at or above `last_sequence` is an empty page. `created_after` and `created_before` do not combine with " +
      "`after_sequence` (422 `request_query_invalid`). When the event after N is past the " +
      `${EVENT_RETENTION_DAYS}-day window the answer is 410 \`event_sequence_expired\` with \`details\` ` +
      "`after_sequence`, `oldest_sequence` (the oldest still kept after it; `last_sequence` + 1 when none is) and " +
      "`last_sequence`: note `last_sequence`, read every resource again from the list routes, then continue with " +
      "`after_sequence=<last_sequence>`.",
    request: {
      query: z
        .strictObject({
          ...cursorQuery,
          type: z
            .enum(EVENT_TYPE_NAMES)
            .optional()
            .openapi({ description: "Only events of this type.", example: "listing.created" }),
          created_after: instant("Only events created at or after this instant (inclusive)."),
          created_before: instant("Only events created strictly before this instant (exclusive)."),
          after_sequence: afterSequenceQuery,
        })
        .superRefine(
          (query, ctx) => {
            for (const issue of windowRules(query)) ctx.addIssue(issue);
          },
          // Each field on its own first: a malformed instant (February 31st included) is its own error.
          { when: (payload) => payload.issues.length === 0 },
        ),
    },
    responses: {
      200: { description: "A page of events.", content: json(EventPageSchema) },
    },
  },
);

export const listEventsHandler: RouteHandler<typeof listEventsRoute, AppEnv> = async (c) => {
  const query = c.req.valid("query");
  const { cursor, limit, type, created_after, created_before, after_sequence } = query;
  const caller = c.get("caller");
  if (type) checkEventTypesReadable(caller.scopes, [type]);
  const readable = readableEventTypes(caller.scopes);
  const req = { keyring: keyringOf(c.env), cursor, limit };
  if (after_sequence !== undefined) {
    const feed = await pageFeed(c.var.db, caller.agencyId, { readable, type, afterSequence: after_sequence }, req);
    return c.json({ ...pageBody(feed, presentEvent), last_sequence: feed.lastSequence }, 200);
  }
  const window = eventWindow(created_after, created_before);
  const [page, last] = await Promise.all([
    pageEvents(c.var.db, caller.agencyId, { readable, type, ...window }, req),
    lastSequence(c.var.db, caller.agencyId).then((l) => visibleLast(c.var.db, caller.agencyId, readable, l)),
  ]);
  return c.json({ ...pageBody(page, presentEvent), last_sequence: last }, 200);
};
