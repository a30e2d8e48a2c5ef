/** The strong entity tag of a resource version: `"v7"` for version 7. */
export const etagOf = (version: number): string => `"v${version}"`;

/** At most this many entity tags are read from one If-Match or If-None-Match header. */
const MAX_ENTITY_TAGS = 16;

/** An `If-Match` / `If-None-Match` value: `*`, or the listed entity tags (quotes kept, `W/` kept). */
export type EntityTags = "*" | readonly string[];

// RFC 9110 entity-tag: an optional W/ and a quoted string of etagc (no DQUOTE, no controls, no space).
const ENTITY_TAG = /^(?:W\/)?"[\x21\x23-\x7e\x80-\xff]*"$/;

/**
 * Parses an `If-Match` or `If-None-Match` header: `*` or a comma-separated list of entity
 * tags (empty list elements allowed, as the list syntax does). Undefined when the value is
 * not of that form or lists more than MAX_ENTITY_TAGS tags.
 */
export function parseEntityTags(value: string): EntityTags | undefined {
  if (value.trim() === "*") return "*";
  const tags: string[] = [];
  for (const part of value.split(",")) {
    const tag = part.trim();
    if (tag === "") continue;
    if (!ENTITY_TAG.test(tag) || tags.length >= MAX_ENTITY_TAGS) return undefined;
    tags.push(tag);
  }
  return tags.length ? tags : undefined;
}

/** The versions named by strong tags of the form `"v<n>"`; other tags name no version of ours. */
export function versionsOf(tags: readonly string[]): number[] {
  const versions: number[] = [];
  for (const tag of tags) {
    const m = /^"v([1-9][0-9]{0,9})"$/.exec(tag);
    if (m) versions.push(Number(m[1]));
  }
  return versions;
}

/** Weak comparison (If-None-Match): the tag matches ignoring a `W/` prefix on either side. */
export function weaklyMatches(tags: EntityTags, etag: string): boolean {
  if (tags === "*") return true;
  const opaque = etag.replace(/^W\//, "");
  return tags.some((tag) => tag.replace(/^W\//, "") === opaque);
}
