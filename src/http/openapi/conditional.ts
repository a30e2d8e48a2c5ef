import type { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../env";

type Operation = { parameters?: unknown[]; responses?: Record<string, { headers?: Record<string, unknown> }> };

const etagHeader = {
  ETag: {
    description:
      'The resource\'s strong entity tag, built from its `version` (`"v7"` for version 7). Send it back in ' +
      "If-None-Match to read only when it changed, or in If-Match to change it only if nobody else did.",
    schema: { type: "string", example: '"v7"' },
  },
};

/** The conditional-request parts of an operation: its header parameter, ETag headers and the 304 answer. */
export function decorateConditional(op: Operation, conditional: "read" | "write"): void {
  op.parameters = [
    ...(op.parameters ?? []),
    { $ref: `#/components/parameters/${conditional === "read" ? "IfNoneMatch" : "IfMatch"}` },
  ];
  for (const [status, response] of Object.entries(op.responses ?? {})) {
    if (status.startsWith("2") && status !== "204") response.headers = { ...etagHeader, ...response.headers };
  }
  if (conditional === "read" && op.responses) {
    op.responses["304"] = {
      description:
        "Not modified: If-None-Match names the current ETag. No body; the ETag, X-Request-Id and the rate " +
        "headers (reporting the window without this request) are sent. A 304 for a named ETag costs no rate " +
        "budget; `*` is counted like any read.",
      headers: { ...etagHeader },
    } as { headers: Record<string, unknown> };
  }
}

/** The If-None-Match and If-Match header parameters, named components of the document. */
export function registerConditionalParameters(app: OpenAPIHono<AppEnv>): void {
  app.openAPIRegistry.registerComponent("parameters", "IfNoneMatch", {
    name: "If-None-Match",
    in: "header",
    required: false,
    description:
      "An ETag this resource answered earlier (or a list of them, or `*`). When one matches the current ETag " +
      "(weak comparison), the answer is 304 with no body and the request costs no rate budget; a tag that does " +
      "not match is counted before the resource is read (429 when the budget is spent). `*` names no version: " +
      "it is counted like any read, and answered 304 when the resource exists. A value that is not a list of " +
      "entity tags is ignored.",
    schema: { type: "string", example: '"v7"' },
  });
  app.openAPIRegistry.registerComponent("parameters", "IfMatch", {
    name: "If-Match",
    in: "header",
    required: false,
    description:
      "Write only if the resource still has this ETag (or one of a list; `*` matches any existing version). " +
      "The check is part of the writing statement: when the resource changed since, nothing is written and " +
      "the answer is 412 `resource_version_mismatch`. A value that is not `*` or a list of quoted entity tags " +
      "is 400 `if_match_malformed`.",
    schema: { type: "string", example: '"v7"' },
  });
}
