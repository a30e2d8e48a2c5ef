import { getOpenApiMetadata } from "@asteasolutions/zod-to-openapi";
import type { ZodError, ZodType } from "zod";

type FormatIssue = Extract<ZodError["issues"][number], { code: "invalid_format" }>;

interface Shape {
  /** The shape in words, with an example, for the problem's message. */
  message: string;
  /**
   * The format, the shape in words and an example; for a pattern the field declares (its
   * OpenAPI `pattern`), that pattern too, as the spec promises (`ctx.pattern` when declared).
   * A built-in format's regex is zod's, never declared, and never shown.
   */
  ctx: { format: string; expected: string; example?: string; pattern?: string };
}

/** Built-in string formats in words, each with an example a client can copy. */
const FORMATS: Record<string, { words: string; example: string }> = {
  date: { words: "an ISO 8601 date", example: "2026-03-09" },
  email: { words: "an email address", example: "name@example.com" },
  url: { words: "an absolute URL", example: "https://example.com/webhooks" },
  uuid: { words: "a UUID", example: "3f1c2a9e-8d4b-4e7a-9c1f-5b2d6e8a0c47" },
};

/** A pattern as the OpenAPI document declares it: the regex's source, without slashes or flags. */
const declared = (pattern: unknown) => String(pattern).replace(/^\/(.*)\/[a-z]*$/s, "$1");

const DATETIME_EXAMPLE = "2026-03-09T09:00:00Z";

function defOf(schema: ZodType): Record<string, unknown> {
  return (schema as unknown as { _zod: { def: Record<string, unknown> } })._zod.def;
}

/** The def of the string check of `format` on `schema` (a format schema itself, or a string with checks). */
function formatDef(schema: ZodType | undefined, format: string): Record<string, unknown> | undefined {
  if (!schema) return undefined;
  let s = schema;
  for (let d = defOf(s); "innerType" in d; d = defOf(s)) s = d.innerType as ZodType;
  const d = defOf(s);
  if (d.format === format) return d;
  const checks = (d.checks ?? []) as { _zod: { def: Record<string, unknown> } }[];
  return checks.map((check) => check._zod.def).find((c) => c.format === format);
}

function datetimeWords(def: Record<string, unknown> | undefined): { words: string; example: string } {
  if (def?.local) return { words: "an ISO 8601 date-time", example: DATETIME_EXAMPLE };
  if (def?.offset)
    return {
      words: "an ISO 8601 date-time with an offset",
      example: `${DATETIME_EXAMPLE} or 2026-03-09T09:00:00-07:00`,
    };
  return { words: "an ISO 8601 date-time in UTC, ending in Z", example: DATETIME_EXAMPLE };
}

/**
 * A string that fails its format, told in words with an example; the message never quotes a regex.
 * Built-in formats come from the table above; a `.regex()` check is told by its own message
 * (`.regex(re, "7 lowercase letters or digits")`), and the field's OpenAPI example shows it.
 */
export function expectedShape(issue: FormatIssue, field: ZodType | undefined): Shape {
  const meta = field ? getOpenApiMetadata(field) : {};
  const documented = typeof meta.example === "string" ? meta.example : undefined;
  let words: string;
  let example: string | undefined;
  if (issue.format === "datetime") {
    ({ words, example } = datetimeWords(formatDef(field, "datetime")));
  } else if (issue.format === "url" && String(formatDef(field, "url")?.protocol) === "/^https$/") {
    words = "an absolute https URL";
    example = documented ?? FORMATS.url!.example;
  } else if (Object.hasOwn(FORMATS, issue.format)) {
    words = FORMATS[issue.format]!.words;
    example = documented ?? FORMATS[issue.format]!.example;
  } else {
    // zod's own message for a bare `.regex()` ("Invalid string: must match pattern …") quotes the regex.
    words = issue.message.startsWith("Invalid") ? "a value of the documented form" : issue.message;
    example = documented;
  }
  return {
    message: `Expected ${words}${example ? `, like ${example}` : ""}.`,
    ctx: {
      format: issue.format,
      expected: words,
      ...(example ? { example } : {}),
      ...(issue.format === "regex" && "pattern" in issue && issue.pattern ? { pattern: declared(issue.pattern) } : {}),
    },
  };
}
