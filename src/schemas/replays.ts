import { z } from "@hono/zod-openapi";
import type { WebhookReplay } from "../db/schema";
import type { ReplayRange } from "../webhooks/replays/ranges";
import { endpointIdParam } from "./webhooks";

const sequence = (description: string, example: number) =>
  z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional().openapi({ description, example });

const instant = (description: string, example: string) =>
  z.iso
    .datetime({ offset: true })
    .optional()
    .openapi({ description: `${description} An ISO 8601 instant with \`Z\` or an offset.`, example });

/** Which fields each form of the range takes; a field of the other form is refused. */
const FORMS = { after_sequence: "until_sequence", since: "until" } as const;

export const CreateReplayBody = z
  .strictObject({
    after_sequence: sequence(
      "Replay the events whose `sequence` is above this: the last sequence your receiver saw (0 for all kept).",
      1041,
    ),
    until_sequence: sequence("With `after_sequence`: the last sequence to replay (default: the latest now).", 1200),
    since: instant("Replay the events written at or after this instant.", "2026-11-28T09:00:00Z"),
    until: instant(
      "With `since`: replay the events written before this instant (default: now).",
      "2026-11-28T10:00:00Z",
    ),
    only_failed: z
      .boolean()
      .optional()
      .openapi({
        description:
          "Only events whose delivery to this endpoint ended dead and was never delivered (by the live delivery or " +
          "an earlier replay).",
        example: false,
      }),
  })
  .superRefine((body, ctx) => {
    const forms = (Object.keys(FORMS) as (keyof typeof FORMS)[]).filter((f) => body[f] !== undefined);
    if (forms.length !== 1)
      ctx.addIssue({
        code: "custom",
        path: [forms.length ? "since" : "after_sequence"],
        message: forms.length
          ? "Send after_sequence or since, not both."
          : "Send after_sequence (a sequence) or since (an instant).",
        params: { code: forms.length ? "validation.failed" : "validation_missing_required" },
      });
    for (const [form, end] of Object.entries(FORMS))
      if (body[end as keyof typeof body] !== undefined && body[form as keyof typeof body] === undefined)
        ctx.addIssue({
          code: "custom",
          path: [end],
          message: `${end} goes with ${form}.`,
          params: { code: "validation.failed" },
        });
  })
  .openapi("CreateWebhookReplay", {
    description: "The range, in one of two forms: `after_sequence` (with `until_sequence`), or `since` (with `until`).",
    example: { after_sequence: 0 },
  });

export const replayParams = endpointIdParam.extend({
  replay_id: z.string().openapi({ example: "rpl_0mhx9q2b7c1d4e5f6g7h8j" }),
});

export const WebhookReplaySchema = z
  .object({
    replay_id: z.string().openapi({ example: "rpl_0mhx9q2b7c1d4e5f6g7h8j" }),
    endpoint_id: z.string().openapi({ example: "we_0mhx3k2a1q8v2l0c9z7rj4" }),
    status: z.enum(["running", "done", "cancelled"]).openapi({
      description:
        "`running` while events are being handed to delivery; `done` once every event of the range is sent or " +
        "skipped; `cancelled` when stopped by DELETE, or by the endpoint's removal (`reason`).",
      example: "running",
    }),
    from_sequence: z.number().int().openapi({ description: "The first sequence of the range.", example: 1042 }),
    to_sequence: z.number().int().openapi({
      description: "The last sequence of the range, fixed when the replay starts; later events go out live.",
      example: 1200,
    }),
    only_failed: z.boolean().openapi({ example: false }),
    events_total: z.number().int().openapi({
      description: "The range's events of the endpoint's event types.",
      example: 159,
    }),
    events_sent: z
      .number()
      .int()
      .openapi({
        description:
          "Events handed to delivery so far, each a delivery of its own in the delivery log (with `replay_id`), " +
          "retried on the usual schedule if the receiver fails.",
        example: 100,
      }),
    events_skipped: z
      .number()
      .int()
      .openapi({
        description:
          "Events of the range not sent: the endpoint's filters left them out, or (`only_failed`) they were " +
          "delivered already. Sent and skipped add up to the total once done.",
        example: 0,
      }),
    reason: z.enum(["cancelled", "endpoint removed"]).nullable().openapi({ example: null }),
    created_at: z.string().openapi({ example: "2026-11-28T10:05:00.000Z" }),
    finished_at: z.string().nullable().openapi({ example: null }),
  })
  .openapi("WebhookReplay");

export const presentReplay = (r: WebhookReplay): z.infer<typeof WebhookReplaySchema> => ({
  replay_id: r.id,
  endpoint_id: r.endpointId,
  status: r.status,
  from_sequence: r.fromSequence,
  to_sequence: r.toSequence,
  only_failed: r.onlyFailed,
  events_total: r.eventsTotal,
  events_sent: r.eventsSent,
  events_skipped: r.eventsSkipped,
  reason: r.reason === "cancelled" || r.reason === "endpoint removed" ? r.reason : null,
  created_at: r.createdAt,
  finished_at: r.finishedAt,
});

/** The range a checked body asks for: after a sequence (up to another), or a time window. */
export const rangeOf = (body: z.infer<typeof CreateReplayBody>): ReplayRange =>
  body.after_sequence !== undefined
    ? { afterSequence: body.after_sequence, untilSequence: body.until_sequence }
    : { since: body.since!, until: body.until };
