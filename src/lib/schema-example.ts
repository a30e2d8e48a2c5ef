/**
 * Composes an example value from a JSON Schema (OpenAPI 3.1) out of the examples its
 * fields declare, so an operation's whole-body example is built from the same schemas
 * that validate and document it and cannot drift from them. A schema's own `example`
 * wins; otherwise an object takes every property that yields an example, an array one
 * item (or `minItems` of them), a choice (`anyOf`/`oneOf`) its first alternative that
 * yields one, `allOf` the merge of its parts, and a bare value its `const`, `default` or
 * first `enum` entry. Returns undefined when a required part has no example.
 */
type Schema = Record<string, unknown>;

const MAX_DEPTH = 24;

export function exampleFromSchema(schema: unknown, schemas: Record<string, unknown> = {}): unknown {
  return compose(schema, schemas, 0, new Set());
}

function resolve(schema: Schema, schemas: Record<string, unknown>, seen: Set<string>): Schema | undefined {
  let out: Schema = schema;
  for (let hops = 0; typeof out.$ref === "string"; hops++) {
    const name = out.$ref.replace("#/components/schemas/", "");
    if (hops > MAX_DEPTH || seen.has(name) || !Object.hasOwn(schemas, name)) return undefined;
    seen.add(name);
    out = schemas[name] as Schema;
  }
  return out;
}

function compose(raw: unknown, schemas: Record<string, unknown>, depth: number, trail: Set<string>): unknown {
  if (!raw || typeof raw !== "object" || depth > MAX_DEPTH) return undefined;
  const seen = new Set(trail);
  const s = resolve(raw as Schema, schemas, seen);
  if (!s) return undefined;
  if (s.example !== undefined) return s.example;
  if (Array.isArray(s.examples) && s.examples.length) return s.examples[0];
  if (s.const !== undefined) return s.const;
  if (s.default !== undefined) return s.default;
  if (Array.isArray(s.enum) && s.enum.length) return s.enum[0];
  const next = (part: unknown) => compose(part, schemas, depth + 1, seen);
  if (Array.isArray(s.allOf)) return merge(s.allOf.filter((part) => !annotationOnly(part)).map(next));
  const choices = (s.anyOf ?? s.oneOf) as unknown[] | undefined;
  if (Array.isArray(choices)) {
    const options = choices.filter((c) => !isNullOnly(c));
    for (const option of options.length ? options : choices) {
      const value = next(option);
      if (value !== undefined) return value;
    }
    return undefined;
  }
  const types = Array.isArray(s.type) ? s.type : [s.type];
  if (types.includes("object") || s.properties) {
    const out: Record<string, unknown> = {};
    const required = new Set((s.required as string[] | undefined) ?? []);
    for (const [name, property] of Object.entries((s.properties as Record<string, unknown>) ?? {})) {
      const value = next(property);
      if (value !== undefined) out[name] = value;
      else if (required.has(name)) return undefined;
    }
    return out;
  }
  if (types.includes("array")) {
    const item = next(s.items);
    if (item === undefined) return typeof s.minItems === "number" && s.minItems > 0 ? undefined : [];
    const count = typeof s.minItems === "number" && s.minItems > 1 ? s.minItems : 1;
    return Array.from({ length: count }, () => item);
  }
  if (types.includes("null") && types.length === 1) return null;
  return undefined;
}

const ANNOTATIONS = new Set(["description", "title", "deprecated", "readOnly", "writeOnly"]);

/** A part such as `{ description }` beside a `$ref`: it says something and constrains nothing. */
function annotationOnly(part: unknown): boolean {
  return !!part && typeof part === "object" && Object.keys(part).every((key) => ANNOTATIONS.has(key));
}

function isNullOnly(option: unknown): boolean {
  return !!option && typeof option === "object" && (option as Schema).type === "null";
}

function merge(parts: unknown[]): unknown {
  if (parts.some((p) => p === undefined)) return undefined;
  if (parts.every((p) => p && typeof p === "object" && !Array.isArray(p))) {
    return Object.assign({}, ...(parts as object[]));
  }
  return parts[0];
}
