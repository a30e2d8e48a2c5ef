// The reference's single-file browser build, bundled into the Worker as a Text module
// (see `rules` in wrangler.jsonc), so the page loads nothing from another host.
import referenceScript from "@scalar/api-reference/dist/browser/standalone.js";
import { Scalar } from "@scalar/hono-api-reference";
import { Hono } from "hono";
import { hex } from "../../lib/crypto/encoding";
import type { AppEnv } from "../env";

export interface ApiReferenceOptions {
  /** Where the page is served. */
  pagePath: string;
  /** Where the page's script is served. */
  scriptPath: string;
  /** The OpenAPI document the page renders. */
  documentPath: string;
  pageTitle: string;
}

interface ReferenceScript {
  body: Blob;
  /** A prefix of the script's SHA-256: the page asks for `?v=<version>`, which may be cached for good. */
  version: string;
  etag: string;
}

let script: Promise<ReferenceScript> | undefined;

/**
 * The library shows a demo token of its own as the placeholder of the key field; ours
 * shows the shape of a sandbox key instead, so nobody takes the demo token for a value.
 */
const DEMO_TOKEN_PLACEHOLDER = "`QUxMIFlPVVIgQkFTRSBBUkUgQkVMT05HIFRPIFVT`";
const KEY_PLACEHOLDER = "`sk_test_…`";

/**
 * Long paths wrap instead of being cut off, in the operation lists and the example
 * cards' titles alike.
 */
const CUSTOM_CSS = `
.scalar-app .endpoint, .scalar-app .endpoint-path { white-space: normal; overflow-wrap: anywhere; height: auto; }
.scalar-app .scalar-card-header-title {
  white-space: normal !important;
  overflow-wrap: anywhere;
  text-overflow: clip !important;
}
`;

/** Encoded and hashed once per isolate, on first use. */
function loadScript(): Promise<ReferenceScript> {
  script ??= (async () => {
    const text = referenceScript.replaceAll(DEMO_TOKEN_PLACEHOLDER, KEY_PLACEHOLDER);
    const body = new Blob([text], { type: "text/javascript; charset=utf-8" });
    const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", await body.arrayBuffer()));
    const version = hex(digest.subarray(0, 8));
    return { body, version, etag: `"${version}"` };
  })();
  return script;
}

const IMMUTABLE = "public, max-age=31536000, immutable";
const REVALIDATE = "public, no-cache";

function matchesEtag(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  return ifNoneMatch.split(",").some((tag) => {
    const t = tag.trim();
    return t === "*" || t.replace(/^W\//, "") === etag;
  });
}

/**
 * The interactive API reference: the page, and the script it runs, both served by the
 * Worker itself. The page also turns off what would reach the reference vendor's hosts:
 * its web fonts (the system fonts are used), telemetry, and the AI chat, MCP and
 * developer-tools buttons it shows on localhost.
 */
export function apiReference(opts: ApiReferenceOptions): Hono<AppEnv> {
  return new Hono<AppEnv>()
    .get(
      opts.pagePath,
      Scalar(async () => ({
        url: opts.documentPath,
        pageTitle: opts.pageTitle,
        cdn: `${opts.scriptPath}?v=${(await loadScript()).version}`,
        withDefaultFonts: false,
        telemetry: false,
        showDeveloperTools: "never",
        agent: { disabled: true },
        customCss: CUSTOM_CSS,
        // The key field starts empty (no value is stored in the page) and is not kept across visits.
        persistAuth: false,
        authentication: { preferredSecurityScheme: "ApiKey" },
        mcp: { disabled: true },
      })),
    )
    .get(opts.scriptPath, async (c) => {
      const { body, version, etag } = await loadScript();
      c.header("ETag", etag);
      c.header("Cache-Control", c.req.query("v") === version ? IMMUTABLE : REVALIDATE);
      if (matchesEtag(c.req.header("if-none-match"), etag)) return c.body(null, 304);
      c.header("Content-Type", body.type);
      c.header("Content-Length", String(body.size));
      c.header("X-Content-Type-Options", "nosniff");
      return c.body(body);
    });
}
