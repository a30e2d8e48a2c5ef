import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

/**
 * The docs and the OpenAPI description are the reference, in the project's own words: nothing in
 * README.md, docs/, examples/, src/ or the TypeScript client points outside the repository. A relative link resolves to a
 * file of the repository; an http(s) URL names an example domain or this machine, or is a value
 * the service works with (below), never a page to go and read.
 */
const root = join(__dirname, "..", "..");

/** Hosts that are values, not reading: each with why it is named. */
const VALUE_HOSTS: Record<string, string> = {
  "oauth2.googleapis.com": "the Google Calendar token endpoint the Worker calls",
  "www.googleapis.com": "the Google Calendar API the Worker calls",
  "s3.eu-west-1.amazonaws.com": "an example S3 endpoint_url of a delivery destination",
  "s3.us-west-004.backblazeb2.com": "an example S3-compatible endpoint_url of a delivery destination",
  "my.matterport.com": "the form a listing's Matterport tour URL takes",
  ".r2.cloudflarestorage.com": "an account's R2 endpoint: where uploads are signed to go",
};

const isValueHost = (host: string) =>
  Object.keys(VALUE_HOSTS).some((h) => (h.startsWith(".") ? host.endsWith(h) : host === h));

const EXAMPLE_HOST = /(^|\.)(example\.(com|org|net)|example|test|localhost)$|^127\.0\.0\.1$/;

function filesUnder(dir: string, ext: RegExp): string[] {
  return readdirSync(join(root, dir), { recursive: true, encoding: "utf8" })
    .filter((f) => ext.test(f))
    .map((f) => join(dir, f));
}

const files = [
  "README.md",
  ...filesUnder("docs", /\.md$/),
  ...filesUnder("examples", /\.(m?js|ts|md)$/),
  "clients/typescript/README.md",
  ...filesUnder("clients/typescript/src", /\.ts$/),
  ...filesUnder("src", /\.ts$/),
];

/** Every http(s) URL of `text` whose host is neither a placeholder nor allowed, as `file:line url`. */
function foreignUrls(file: string, text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/https?:\/\/([^\s/"'`)<>?#\],;]*)/g)) {
    const host = m[1]!.replace(/:\d+$/, "").toLowerCase();
    // `https://<account>.…`, `https://sandbox.…`, `https://${accountId}.…`: a placeholder, not a link.
    if (!host || host.includes("…") || host.includes("${")) continue;
    if (EXAMPLE_HOST.test(host) || isValueHost(host)) continue;
    const line = text.slice(0, m.index).split("\n").length;
    out.push(`${file}:${line} ${m[0]}`);
  }
  return out;
}

/** Every Markdown link of `text` that is relative and does not resolve to a file of the repository. */
function brokenRelativeLinks(file: string, text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
    const target = m[1]!;
    if (/^(https?:|mailto:|#)/.test(target)) continue;
    const path = resolve(root, dirname(file), target.split("#")[0]!);
    const inside = !relative(root, path).startsWith("..");
    if (!inside || !existsSync(path)) out.push(`${file}: ${target}`);
  }
  return out;
}

describe("links stay inside the repository", () => {
  it("finds the files it checks", () => {
    expect(files).toContain("README.md");
    expect(files.filter((f) => f.startsWith("docs")).length).toBeGreaterThan(5);
    expect(files.filter((f) => f.startsWith("src")).length).toBeGreaterThan(50);
  });

  it("every relative Markdown link resolves to a file of the repository", () => {
    const broken = files
      .filter((f) => f.endsWith(".md"))
      .flatMap((f) => brokenRelativeLinks(f, readFileSync(join(root, f), "utf8")));
    expect(broken).toEqual([]);
  });

  it("every http(s) URL names an example domain, this machine or a value the service works with", () => {
    const foreign = files.flatMap((f) => foreignUrls(f, readFileSync(join(root, f), "utf8")));
    expect(foreign).toEqual([]);
  });

  it("the checks bite", () => {
    expect(brokenRelativeLinks("docs/api.md", "the [spec](../shared/spec/interface.md)")).toHaveLength(1);
    expect(brokenRelativeLinks("README.md", "[guide](docs/api.md#errors)")).toEqual([]);
    expect(foreignUrls("docs/x.md", "see https://developers.cloudflare.com/workers/")).toHaveLength(1);
    expect(foreignUrls("docs/x.md", "POST https://hooks.harbourmedia.example/alms and https://sandbox.…/api")).toEqual(
      [],
    );
  });
});
