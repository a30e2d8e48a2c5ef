import { z } from "@hono/zod-openapi";
import { ERRORS, type ErrorCode } from "../../lib/errors";

/** Where each code's entry lives in the served docs; every envelope links to it. */
export const ERROR_DOCS_PATH = "/api/v1/docs/errors";

const ErrorEnvelopeSchema = z
  .object({
    error: z.object({
      code: z.string().openapi({
        description: "Stable snake_case identifier (some contain a dot). Branch on this.",
        example: "listing_not_found",
      }),
      message: z.string().openapi({ description: "Human-readable one-liner.", example: "No such listing." }),
      request_id: z
        .string()
        .openapi({ description: "Mirrors the X-Request-Id response header.", example: "req_0mhx3k2a1b2c3d4e5f6g7h8i" }),
      details: z
        .record(z.string(), z.unknown())
        .openapi({ description: "Structured context; an empty object when none." }),
      doc_url: z.string().openapi({
        description: "This code's entry in the error catalog: what it means, whether a retry helps, what to do.",
        example: "https://api.example.com/api/v1/docs/errors#listing_not_found",
      }),
    }),
  })
  .openapi("ErrorEnvelope");

/**
 * OpenAPI `responses` entries for the given codes, grouped by status: each status lists
 * the codes it can carry, with an example per code.
 */
export function errorResponses(codes: readonly ErrorCode[]) {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of new Set(codes)) {
    const status = ERRORS[code][0];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const out: Record<
    string,
    {
      description: string;
      content: {
        "application/json": { schema: typeof ErrorEnvelopeSchema; examples: Record<string, { value: unknown }> };
      };
    }
  > = {};
  for (const [status, list] of [...byStatus].sort(([a], [b]) => a - b)) {
    out[String(status)] = {
      description: `Error. \`error.code\` is one of: ${list.map((c) => `\`${c}\``).join(", ")}.`,
      content: {
        "application/json": {
          schema: ErrorEnvelopeSchema,
          examples: Object.fromEntries(
            list.map((code) => [
              code,
              {
                value: {
                  error: {
                    code,
                    message: ERRORS[code][1],
                    request_id: "req_0mhx3k2a1b2c3d4e5f6g7h8i",
                    details: {},
                    doc_url: `https://api.example.com${ERROR_DOCS_PATH}#${code}`,
                  },
                },
              },
            ]),
          ),
        },
      },
    };
  }
  return out;
}
