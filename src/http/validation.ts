import type { Context } from "hono";
import type { ZodError, ZodType } from "zod";
import { DomainError, type ErrorCode } from "../lib/errors";
import { suggestions } from "../lib/suggest";
import type { AppEnv } from "./env";
import { expectedShape } from "./expected-shape";

type Issue = ZodError["issues"][number];
type PathKey = PropertyKey;

interface FieldError {
  field: string;
  code: ErrorCode;
  message: string;
  did_you_mean?: string[];
  migration?: { from: string; to: string };
  ctx?: Record<string, unknown>;
  children?: FieldError[];
}

/**
 * Fields renamed within this major version: the old name answers `validation_deprecated_field`.
 * Field names come from the client, so every lookup by name goes through a Map or
 * `Object.hasOwn`, never a plain object (where `constructor` or `__proto__` would be found).
 */
const renames = new WeakMap<object, ReadonlyMap<string, string>>();

export function withRenames<T extends ZodType>(schema: T, map: Record<string, string>): T {
  renames.set(schema, new Map(Object.entries(map)));
  return schema;
}

/** What to say of values an enum leaves out on purpose (a status with a route of its own), by schema. */
const valueHints = new WeakMap<object, ReadonlyMap<string, string>>();

/** Registers, for an enum field, the sentence that answers each value it refuses on purpose. */
export function withValueHints<T extends ZodType>(schema: T, hints: Record<string, string>): T {
  valueHints.set(schema, new Map(Object.entries(hints)));
  return schema;
}

const ownField = (shape: Record<string, ZodType>, key: PropertyKey): ZodType | undefined =>
  typeof key === "string" && Object.hasOwn(shape, key) ? shape[key] : undefined;

const fieldName = (path: readonly PathKey[]) =>
  path.reduce<string>(
    (acc, k) => (typeof k === "number" ? `${acc}[${k}]` : acc ? `${acc}.${String(k)}` : String(k)),
    "",
  );

function def(schema: ZodType): { type: string; [k: string]: unknown } {
  return (schema as unknown as { _zod: { def: { type: string } } })._zod.def;
}

/** The object schema found at `path` below `schema`, through optional, default, pipe and array wrappers. */
function schemaAt(schema: ZodType | undefined, path: readonly PathKey[]): ZodType | undefined {
  let s = schema;
  for (let i = 0; s && i <= path.length; ) {
    const d = def(s);
    if (["optional", "nullable", "default", "prefault", "readonly", "nonoptional", "catch"].includes(d.type))
      s = d.innerType as ZodType;
    else if (d.type === "pipe") s = d.in as ZodType;
    else if (i === path.length) return s;
    else if (d.type === "object") s = ownField(d.shape as Record<string, ZodType>, path[i++]!);
    else if (d.type === "array") {
      s = d.element as ZodType;
      i++;
    } else return undefined;
  }
  return s;
}

/** The schema declared for the field at `path`, wrappers included: they carry its OpenAPI metadata. */
function fieldSchemaAt(root: ZodType | undefined, path: readonly PathKey[]): ZodType | undefined {
  if (path.length === 0) return root;
  const parent = schemaAt(root, path.slice(0, -1));
  if (!parent) return undefined;
  const d = def(parent);
  if (d.type === "object") return ownField(d.shape as Record<string, ZodType>, path.at(-1)!);
  return d.type === "array" ? (d.element as ZodType) : undefined;
}

function valueAt(input: unknown, path: readonly PathKey[]): { present: boolean; value: unknown } {
  let cur: unknown = input;
  for (const k of path) {
    if (cur === null || typeof cur !== "object" || !Object.hasOwn(cur, k as string))
      return { present: false, value: undefined };
    cur = (cur as Record<PropertyKey, unknown>)[k];
  }
  return { present: cur !== undefined, value: cur };
}

const jsonType = (v: unknown) =>
  v === null
    ? "null"
    : Array.isArray(v)
      ? "array"
      : typeof v === "number" && Number.isInteger(v)
        ? "integer"
        : typeof v;

type Located = { path: readonly PathKey[]; error: FieldError };

function issueToErrors(issue: Issue, root: ZodType | undefined, input: unknown): Located[] {
  const one = (error: FieldError): Located[] => [{ path: issue.path, error }];
  const field = fieldName(issue.path);
  switch (issue.code) {
    case "unrecognized_keys": {
      const obj = schemaAt(root, issue.path);
      const known = obj && def(obj).type === "object" ? Object.keys(def(obj).shape as object) : [];
      const renamed = (obj && renames.get(obj)) ?? new Map<string, string>();
      return issue.keys.map((key) => {
        const path = [...issue.path, key];
        const f = fieldName(path);
        const to = renamed.get(key);
        if (to)
          return {
            path,
            error: {
              field: f,
              code: "validation_deprecated_field",
              message: `'${key}' was renamed to '${to}'.`,
              migration: { from: key, to },
            },
          };
        const did_you_mean = suggestions(key, known);
        const error: FieldError = {
          field: f,
          code: "validation_unknown_field",
          message: `'${key}' is not a field of this request.`,
          ...(did_you_mean.length ? { did_you_mean } : {}),
        };
        return { path, error };
      });
    }
    case "invalid_type": {
      const { present, value } = valueAt(input, issue.path);
      if (!present)
        return one({ field, code: "validation_missing_required", message: `'${field || "body"}' is required.` });
      return one({
        field,
        code: "validation_type_mismatch",
        message: `Expected ${issue.expected}, received ${jsonType(value)}.`,
        ctx: { expected: issue.expected, received: jsonType(value) },
      });
    }
    case "too_small":
    case "too_big": {
      const bound =
        issue.code === "too_small" ? { minimum: Number(issue.minimum) } : { maximum: Number(issue.maximum) };
      const ctx = { ...bound, inclusive: issue.inclusive ?? true, origin: issue.origin };
      if (issue.origin === "array" || issue.origin === "set")
        return one({ field, code: "validation_array_length", message: issue.message, ctx });
      return one({ field, code: "validation_out_of_range", message: issue.message, ctx });
    }
    case "invalid_value": {
      const { present, value } = valueAt(input, issue.path);
      if (!present)
        return one({ field, code: "validation_missing_required", message: `'${field || "body"}' is required.` });
      const allowed = `Must be one of: ${issue.values.map(String).join(", ")}.`;
      const schema = fieldSchemaAt(root, issue.path);
      const hint = typeof value === "string" && schema ? valueHints.get(schema)?.get(value) : undefined;
      const did_you_mean =
        typeof value === "string" && !hint
          ? suggestions(
              value,
              issue.values.map(String).filter((v) => v !== value),
            )
          : [];
      return one({
        field,
        code: "validation_enum_not_allowed",
        message: hint ? `${hint} ${allowed}` : allowed,
        ctx: { expected: issue.values },
        ...(did_you_mean.length ? { did_you_mean } : {}),
      });
    }
    case "invalid_union": {
      // A discriminated union whose discriminator is absent or not one of its values.
      const options = (issue as { options?: unknown[] }).options;
      if (!options || (issue as { note?: string }).note !== "No matching discriminator")
        return one({ field, code: "validation.failed", message: issue.message });
      if (!valueAt(input, issue.path).present)
        return one({ field, code: "validation_missing_required", message: `'${field || "body"}' is required.` });
      return one({
        field,
        code: "validation_enum_not_allowed",
        message: `Must be one of: ${options.map(String).join(", ")}.`,
        ctx: { expected: options },
      });
    }
    case "invalid_format": {
      const { message, ctx } = expectedShape(issue, fieldSchemaAt(root, issue.path));
      return one({ field, code: "validation_string_pattern", message, ctx });
    }
    case "custom": {
      // A refinement of a route's schema names its own code and context (see `queryRule`).
      const params = issue.params as { code?: ErrorCode; ctx?: Record<string, unknown> } | undefined;
      if (!params?.code) return one({ field, code: "validation.failed", message: issue.message });
      return one({ field, code: params.code, message: issue.message, ctx: params.ctx ?? {} });
    }
    case "not_multiple_of":
      return one({
        field,
        code: "validation_out_of_range",
        message: issue.message,
        ctx: { multiple_of: Number(issue.divisor) },
      });
    default:
      return one({ field, code: "validation.failed", message: issue.message });
  }
}

/** Errors below a top-level field are grouped under it as `children`. */
function nest(flat: Located[]): FieldError[] {
  const out: FieldError[] = [];
  const groups = new Map<string, FieldError>();
  for (const { path, error } of flat) {
    if (path.length <= 1) {
      out.push(error);
      continue;
    }
    const top = String(path[0]);
    let group = groups.get(top);
    if (!group) {
      group = { field: top, code: "validation_nested_error", message: `'${top}' has invalid content.`, children: [] };
      groups.set(top, group);
      out.push(group);
    }
    group.children!.push(error);
  }
  return out;
}

export function validationError(
  target: string,
  error: ZodError,
  root: ZodType | undefined,
  input: unknown,
): DomainError {
  const flat = error.issues.flatMap((issue) => issueToErrors(issue, root, input));
  const errors = nest(flat);
  const byField = new Map<string, string[]>();
  for (const { error: e } of flat) {
    const name = e.field || "body";
    byField.set(name, [...(byField.get(name) ?? []), e.message]);
  }
  // Built from entries, so a field named `__proto__` is an own property, listed like any other.
  const fields: Record<string, string[]> = Object.fromEntries(byField);
  if (target === "query") {
    const summary = flat.map(({ error: e }) => `${e.field}: ${e.message}`).join("; ");
    return new DomainError("request_query_invalid", {
      message: `Invalid query parameter. ${summary}`,
      details: { errors, fields },
    });
  }
  const codes = new Set(errors.map((e) => e.code));
  const code: ErrorCode = codes.size === 1 ? [...codes][0]! : "validation.failed";
  const only = flat.length === 1 ? flat[0]!.error : undefined;
  const message = only
    ? `${only.field ? `${only.field}: ` : ""}${only.message}`
    : `The request failed validation (${flat.length} problems).`;
  return new DomainError(code, { message, details: { errors, fields } });
}

/**
 * A rule of a route's schema that ties fields together, as a zod issue the validation hook
 * answers with `code` and `ctx`, exactly as it answers the schema's own checks.
 */
export const queryRule = (field: string, code: ErrorCode, message: string, ctx: Record<string, unknown> = {}) => ({
  code: "custom" as const,
  path: [field],
  message,
  params: { code, ctx },
});

/** The validation hook every route uses: a failed parse becomes the spec's validation codes. */
export function validationHook(
  result: { target: string } & ({ success: true } | { success: false; error: ZodError }),
  c: Context,
): void {
  if (result.success) return;
  // The route's declared schemas, so that an unknown field can be compared with the declared ones.
  const schemas = (c as Context<AppEnv>).var.routes?.operation(c.req.method, c.req.routePath)?.schemas;
  const root = result.target === "json" ? schemas?.json : result.target === "query" ? schemas?.query : schemas?.param;
  // The validator passes the raw input along as `data`; it tells a missing field from a mistyped one.
  const input = (result as { data?: unknown }).data;
  throw validationError(result.target, result.error, root, input);
}
