/**
 * The part of JSON Schema (OpenAPI 3.1) that the served documents use, checked without
 * code generation so it runs inside workerd: $ref, type (a list included), nullable,
 * enum, const, properties, required, additionalProperties, items, allOf, anyOf, oneOf,
 * string lengths and patterns, numeric bounds, array lengths. Returns every mismatch as
 * "path: what".
 */
type Schema = Record<string, any>;

export function validate(doc: { components?: { schemas?: Record<string, Schema> } }, schema: Schema, value: unknown) {
  const problems: string[] = [];
  const resolve = (s: Schema): Schema => {
    let out = s;
    for (let hops = 0; typeof out.$ref === "string" && hops < 20; hops++) {
      const name = out.$ref.replace("#/components/schemas/", "");
      const target = doc.components?.schemas?.[name];
      if (!target) throw new Error(`unresolved $ref ${out.$ref}`);
      out = target;
    }
    return out;
  };
  const typeOf = (v: unknown) =>
    v === null ? "null" : Array.isArray(v) ? "array" : Number.isInteger(v) ? "integer" : typeof v;
  const fits = (t: string, v: unknown) => {
    const actual = typeOf(v);
    return t === actual || (t === "number" && actual === "integer");
  };
  const check = (raw: Schema, v: unknown, at: string): boolean => {
    const before = problems.length;
    const s = resolve(raw);
    if (s.nullable && v === null) return true;
    if (s.type !== undefined) {
      const types: string[] = Array.isArray(s.type) ? s.type : [s.type];
      if (!types.some((t) => fits(t, v))) {
        problems.push(`${at}: expected ${types.join("|")}, got ${typeOf(v)} ${JSON.stringify(v)?.slice(0, 80)}`);
        return false;
      }
    }
    if (s.enum && !s.enum.some((e: unknown) => e === v)) problems.push(`${at}: ${JSON.stringify(v)} not in enum`);
    if ("const" in s && s.const !== v) problems.push(`${at}: ${JSON.stringify(v)} is not ${JSON.stringify(s.const)}`);
    if (typeof v === "string") {
      if (s.minLength !== undefined && v.length < s.minLength) problems.push(`${at}: shorter than ${s.minLength}`);
      if (s.maxLength !== undefined && v.length > s.maxLength) problems.push(`${at}: longer than ${s.maxLength}`);
      if (s.pattern && !new RegExp(s.pattern, "u").test(v)) problems.push(`${at}: ${v} does not match ${s.pattern}`);
      if (s.format === "date-time" && Number.isNaN(Date.parse(v))) problems.push(`${at}: ${v} is not a date-time`);
    }
    if (typeof v === "number") {
      if (s.minimum !== undefined && v < s.minimum) problems.push(`${at}: below ${s.minimum}`);
      if (s.maximum !== undefined && v > s.maximum) problems.push(`${at}: above ${s.maximum}`);
    }
    if (Array.isArray(v)) {
      if (s.minItems !== undefined && v.length < s.minItems) problems.push(`${at}: fewer than ${s.minItems} items`);
      if (s.maxItems !== undefined && v.length > s.maxItems) problems.push(`${at}: more than ${s.maxItems} items`);
      if (s.items) for (const [i, item] of v.entries()) check(s.items, item, `${at}[${i}]`);
    }
    if (typeOf(v) === "object") {
      const obj = v as Record<string, unknown>;
      for (const name of s.required ?? [])
        if (!Object.hasOwn(obj, name)) problems.push(`${at}.${name}: required but absent`);
      const props: Record<string, Schema> = s.properties ?? {};
      for (const [name, item] of Object.entries(obj)) {
        if (Object.hasOwn(props, name)) check(props[name]!, item, `${at}.${name}`);
        else if (s.additionalProperties === false) problems.push(`${at}.${name}: not in the schema`);
        else if (typeof s.additionalProperties === "object") check(s.additionalProperties, item, `${at}.${name}`);
      }
    }
    for (const part of s.allOf ?? []) check(part, v, at);
    const alternatives = (list: Schema[]) =>
      list.filter((option) => {
        const mark = problems.length;
        const ok = check(option, v, at) && problems.length === mark;
        problems.length = mark;
        return ok;
      }).length;
    if (s.anyOf && alternatives(s.anyOf) === 0) problems.push(`${at}: matches none of anyOf`);
    if (s.oneOf && alternatives(s.oneOf) !== 1) problems.push(`${at}: matches ${alternatives(s.oneOf)} of oneOf`);
    return problems.length === before;
  };
  check(schema, value, "$");
  return problems;
}
