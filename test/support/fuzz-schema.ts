import fc from "fast-check";

/** An OpenAPI 3.1 document, read loosely. */
export type Doc = Record<string, any>;
export type Schema = Record<string, any> | boolean | undefined;

/** Follows a local `$ref` (`#/components/...`); throws when it does not resolve. */
export function deref(doc: Doc, schema: any): any {
  let s = schema;
  for (let hops = 0; s && typeof s === "object" && typeof s.$ref === "string"; hops++) {
    if (hops > 32 || !s.$ref.startsWith("#/")) throw new Error(`unresolvable $ref ${s.$ref}`);
    const target = s.$ref
      .slice(2)
      .split("/")
      .reduce((node: any, part: string) => (node && Object.hasOwn(node, part) ? node[part] : undefined), doc);
    if (target === undefined) throw new Error(`unresolvable $ref ${s.$ref}`);
    s = target;
  }
  return s;
}

const typeOf = (v: unknown) =>
  v === null ? "null" : Array.isArray(v) ? "array" : Number.isInteger(v) ? "integer" : typeof v;

function matchesType(type: string, v: unknown) {
  const t = typeOf(v);
  return type === t || (type === "number" && t === "integer");
}

function checkFormat(format: string, v: string) {
  if (format === "date-time") return /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/.test(v);
  if (format === "uri") return URL.canParse(v);
  if (format === "email") return /^[^@\s]+@[^@\s]+$/.test(v);
  return true;
}

/**
 * The subset of JSON Schema 2020-12 the served documents use: `$ref`, type (and type
 * arrays), const, enum, properties/required/additionalProperties, items, min/maxItems,
 * min/maxLength, pattern, format, minimum/maximum (and exclusive), allOf/anyOf/oneOf.
 * Returns the list of violations, empty when `value` conforms.
 */
export function validate(doc: Doc, schema: Schema, value: unknown, at = "$", errors: string[] = []): string[] {
  if (schema === true || schema === undefined) return errors;
  if (schema === false) {
    errors.push(`${at}: no value allowed`);
    return errors;
  }
  const s = deref(doc, schema);
  if (errors.length > 20) return errors;
  if (s.type !== undefined) {
    const types: string[] = Array.isArray(s.type) ? s.type : [s.type];
    if (!types.some((t) => matchesType(t, value))) {
      errors.push(`${at}: expected ${types.join("|")}, got ${typeOf(value)}`);
      return errors;
    }
  }
  if (Object.hasOwn(s, "const") && JSON.stringify(s.const) !== JSON.stringify(value)) {
    errors.push(`${at}: expected const ${JSON.stringify(s.const)}`);
  }
  if (Array.isArray(s.enum) && !s.enum.some((e: unknown) => JSON.stringify(e) === JSON.stringify(value))) {
    errors.push(`${at}: ${JSON.stringify(value)} not in enum ${JSON.stringify(s.enum)}`);
  }
  for (const sub of s.allOf ?? []) validate(doc, sub, value, at, errors);
  if (Array.isArray(s.anyOf) && !s.anyOf.some((sub: Schema) => validate(doc, sub, value, at).length === 0)) {
    errors.push(`${at}: matches none of anyOf`);
  }
  if (Array.isArray(s.oneOf)) {
    const n = s.oneOf.filter((sub: Schema) => validate(doc, sub, value, at).length === 0).length;
    if (n !== 1) errors.push(`${at}: matches ${n} of oneOf`);
  }
  if (typeof value === "string") {
    const length = [...value].length;
    if (s.minLength !== undefined && length < s.minLength) errors.push(`${at}: shorter than ${s.minLength}`);
    if (s.maxLength !== undefined && length > s.maxLength) errors.push(`${at}: longer than ${s.maxLength}`);
    if (s.pattern !== undefined && !new RegExp(s.pattern).test(value)) {
      errors.push(`${at}: ${JSON.stringify(value)} fails pattern ${s.pattern}`);
    }
    if (s.format !== undefined && !checkFormat(s.format, value)) {
      errors.push(`${at}: ${JSON.stringify(value)} is not a ${s.format}`);
    }
  }
  if (typeof value === "number") {
    if (s.minimum !== undefined && value < s.minimum) errors.push(`${at}: ${value} < ${s.minimum}`);
    if (s.maximum !== undefined && value > s.maximum) errors.push(`${at}: ${value} > ${s.maximum}`);
    if (typeof s.exclusiveMinimum === "number" && value <= s.exclusiveMinimum) errors.push(`${at}: too small`);
    if (typeof s.exclusiveMaximum === "number" && value >= s.exclusiveMaximum) errors.push(`${at}: too large`);
  }
  if (Array.isArray(value)) {
    if (s.minItems !== undefined && value.length < s.minItems) errors.push(`${at}: fewer than ${s.minItems} items`);
    if (s.maxItems !== undefined && value.length > s.maxItems) errors.push(`${at}: more than ${s.maxItems} items`);
    if (s.items !== undefined) {
      for (const [i, item] of value.entries()) validate(doc, s.items, item, `${at}[${i}]`, errors);
    }
  }
  if (typeOf(value) === "object") {
    const obj = value as Record<string, unknown>;
    for (const name of s.required ?? []) {
      if (!Object.hasOwn(obj, name)) errors.push(`${at}: missing required ${name}`);
    }
    const props = s.properties ?? {};
    for (const [name, v] of Object.entries(obj)) {
      if (Object.hasOwn(props, name)) validate(doc, props[name], v, `${at}.${name}`, errors);
      else if (s.additionalProperties === false) errors.push(`${at}: undeclared property ${name}`);
      else if (s.additionalProperties !== undefined) validate(doc, s.additionalProperties, v, `${at}.${name}`, errors);
    }
  }
  return errors;
}

/** A JSON number token sent verbatim (`-0`, `1e400`, `9007199254740993`): JSON.stringify cannot write these. */
class RawNumber {
  constructor(readonly token: string) {}
  [fc.toStringMethod]() {
    return `raw(${this.token})`;
  }
}

/** JSON text of a generated value, writing RawNumber tokens as they are and own `__proto__` keys as keys. */
export function toJson(v: unknown): string {
  if (v instanceof RawNumber) return v.token;
  if (Array.isArray(v)) return `[${v.map(toJson).join(",")}]`;
  if (v !== null && typeof v === "object") {
    return `{${Object.keys(v)
      .map((k) => `${JSON.stringify(k)}:${toJson((v as Record<string, unknown>)[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(v) ?? "null";
}

export const PROTO_NAMES = [
  "__proto__",
  "constructor",
  "toString",
  "hasOwnProperty",
  "prototype",
  "valueOf",
  "isPrototypeOf",
  "__defineGetter__",
];

const controlChars = fc.string({
  unit: fc.integer({ min: 0, max: 0x1f }).map((c) => String.fromCharCode(c)),
  minLength: 1,
  maxLength: 12,
});

/** Strings that have broken services before: prototype names, script URLs, control chars, odd unicode, huge. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(...PROTO_NAMES),
  fc.constantFrom(
    "javascript:alert(1)",
    "JaVaScRiPt:alert(document.cookie)",
    " javascript:alert(1)",
    "data:text/html,<script>alert(1)</script>",
    "https://127.0.0.1/",
    "http://169.254.169.254/latest/meta-data/",
    "https://[::1]/x",
    "file:///etc/passwd",
    "https://user:pass@example.com/",
    "https://example.com/\u0000",
    "//evil.example",
    "%00",
    "%",
    "_",
    "%_%",
    "' OR 1=1 --",
    '"; DROP TABLE listings; --',
    "../../etc/passwd",
    "NaN",
    "Infinity",
    "-0",
    "1e308",
    "9007199254740993",
    "",
    " ",
    "\u0000",
    "\ud800",
    "\udfff\ud800",
    "\u202e",
    "\ufeff",
    "𝕏",
    "👨‍👩‍👧‍👦",
    "<script>alert(1)</script>",
    "$" + "{7*7}",
    "null",
    "true",
  ),
  controlChars,
  fc.string({ unit: "grapheme", maxLength: 16 }),
  fc.string({ unit: "binary", maxLength: 16 }),
  fc
    .tuple(fc.constantFrom("a", "é", "\u0000", "💥", "%", "/"), fc.integer({ min: 129, max: 70_000 }))
    .map(([c, n]) => c.repeat(n)),
);

const hostileNumber: fc.Arbitrary<unknown> = fc.constantFrom(
  1e308,
  -1e308,
  Number.MAX_SAFE_INTEGER,
  -1,
  0,
  0.5,
  5e-324,
  2 ** 31,
  2 ** 32,
  2 ** 63,
  new RawNumber("-0"),
  new RawNumber("1e400"),
  new RawNumber("-1e400"),
  new RawNumber("9007199254740993"),
  new RawNumber("1E+2"),
  new RawNumber("123456789012345678901234567890"),
);

const wrongType: fc.Arbitrary<unknown> = fc.constantFrom(
  null,
  true,
  false,
  [],
  {},
  [[[[[]]]]],
  JSON.parse('{"__proto__":{"admin":true,"polluted":1}}'),
  JSON.parse('{"constructor":{"prototype":{"polluted":1}}}'),
);

const hostileValue: fc.Arbitrary<unknown> = fc.oneof(hostileString, hostileNumber, wrongType);

const hostileKey = fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...PROTO_NAMES) }, hostileString);

/** Sometimes-present extra keys: prototype names and hostile strings, with hostile values. */
const someExtraEntries = fc.oneof(
  { weight: 9, arbitrary: fc.constant([] as [string, unknown][]) },
  { weight: 1, arbitrary: fc.array(fc.tuple(hostileKey, hostileValue), { minLength: 1, maxLength: 2 }) },
);

const mutate = <T>(a: fc.Arbitrary<T>): fc.Arbitrary<unknown> =>
  fc.oneof({ weight: 12, arbitrary: a as fc.Arbitrary<unknown> }, { weight: 1, arbitrary: hostileValue });

/** Every primitive leaf of a JSON value, as the container and key holding it. */
function leaves(v: unknown, out: [any, string][] = []): [any, string][] {
  if (v === null || typeof v !== "object") return out;
  for (const [k, item] of Object.entries(v)) {
    if (item !== null && typeof item === "object") leaves(item, out);
    else out.push([v, k]);
  }
  return out;
}

/**
 * A conforming value with exactly one leaf replaced by a hostile string or value, so that the
 * rest passes validation and the hostile part reaches the handler.
 */
export function oneMutation(doc: Doc, schema: Schema, hints: Hints): fc.Arbitrary<unknown> {
  return fc
    .tuple(
      schemaArb(doc, schema, 0, hints, true),
      fc.nat(),
      fc.oneof({ weight: 3, arbitrary: hostileString as fc.Arbitrary<unknown> }, hostileValue),
    )
    .map(([value, at, hostile]) => {
      const copy = structuredClone(value);
      const all = leaves(copy);
      if (all.length === 0) return copy;
      const [container, key] = all[at % all.length]!;
      container[key] = hostile;
      return copy;
    });
}

function stringArb(s: any): fc.Arbitrary<string> {
  const max = Math.min(s.maxLength ?? 40, 40);
  const min = Math.min(s.minLength ?? 0, max);
  if (s.format === "date-time") {
    return fc
      .date({ min: new Date("2000-01-01"), max: new Date("2100-01-01"), noInvalidDate: true })
      .map((d) => d.toISOString());
  }
  if (s.format === "uri") {
    return fc.oneof(
      fc.constantFrom("https://example.com/hook", "https://receiver.example.org/a?b=c"),
      fc.webUrl({ validSchemes: ["https"] }),
    );
  }
  if (s.format === "email") return fc.emailAddress();
  if (typeof s.pattern === "string") {
    try {
      return fc
        .stringMatching(new RegExp(s.pattern))
        .filter((v) => v.length >= min && v.length <= (s.maxLength ?? 1e9));
    } catch {
      return fc.string({ minLength: min, maxLength: max });
    }
  }
  return fc.string({ minLength: min, maxLength: max });
}

/** Known-good values for properties of a given name (user ids of the fuzzed agency, say). */
export type Hints = Record<string, string[]>;

/** Values that mostly conform to `schema`, with hostile leaves and hostile extra keys mixed in. */
export function schemaArb(
  doc: Doc,
  schema: Schema,
  depth = 0,
  hints: Hints = {},
  valid = false,
): fc.Arbitrary<unknown> {
  if (schema === true || schema === undefined || schema === false || depth > 6)
    return valid ? fc.constant({}) : hostileValue;
  const s = deref(doc, schema);
  const mutated = <T>(a: fc.Arbitrary<T>): fc.Arbitrary<unknown> => (valid ? a : mutate(a));
  const extraEntries = valid ? fc.constant([] as [string, unknown][]) : someExtraEntries;
  if (Object.hasOwn(s, "const")) return mutated(fc.constant(s.const));
  if (Array.isArray(s.enum)) return mutated(fc.constantFrom(...s.enum));
  const alternatives = s.anyOf ?? s.oneOf;
  if (Array.isArray(alternatives))
    return fc.oneof(...alternatives.map((a: Schema) => schemaArb(doc, a, depth + 1, hints, valid)));
  if (Array.isArray(s.allOf)) {
    const merged: any = { type: "object", properties: {}, required: [] };
    for (const part of s.allOf.map((p: Schema) => deref(doc, p))) {
      Object.assign(merged.properties, part.properties ?? {});
      merged.required.push(...(part.required ?? []));
    }
    return schemaArb(doc, merged, depth + 1, hints, valid);
  }
  const types: string[] = Array.isArray(s.type) ? s.type : s.type ? [s.type] : ["object"];
  const arbs = types.map((type): fc.Arbitrary<unknown> => {
    switch (type) {
      case "null":
        return fc.constant(null);
      case "boolean":
        return fc.boolean();
      case "integer": {
        const min = Math.max(s.minimum ?? -1e6, Number.MIN_SAFE_INTEGER);
        const max = Math.min(s.maximum ?? 1e6, Number.MAX_SAFE_INTEGER);
        return fc.integer({ min: Math.ceil(min), max: Math.floor(Math.max(min, max)) });
      }
      case "number":
        return fc.double({ min: s.minimum ?? -1e6, max: s.maximum ?? 1e6, noNaN: true });
      case "string":
        return stringArb(s);
      case "array":
        return fc.array(schemaArb(doc, s.items, depth + 1, hints, valid), {
          minLength: s.minItems ?? 0,
          maxLength: Math.max(s.minItems ?? 0, Math.min(s.maxItems ?? 3, 3)),
        });
      default: {
        const props: Record<string, any> = s.properties ?? {};
        const record = fc.record(
          Object.fromEntries(
            Object.entries(props).map(([k, v]) => {
              const generated = schemaArb(doc, v, depth + 1, hints, valid);
              const known = Object.hasOwn(hints, k) ? hints[k]! : [];
              if (!known.length) return [k, generated];
              const hinted = fc.constantFrom(...known);
              return [k, valid ? hinted : fc.oneof({ weight: 6, arbitrary: hinted }, generated)];
            }),
          ),
          { requiredKeys: (s.required ?? []).filter((k: string) => Object.hasOwn(props, k)) },
        );
        return fc
          .tuple(record, extraEntries)
          .map(([base, extra]) => Object.fromEntries([...Object.entries(base as object), ...extra]));
      }
    }
  });
  return mutated(arbs.length === 1 ? arbs[0]! : fc.oneof(...arbs));
}
