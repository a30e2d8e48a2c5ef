import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import worker from "../../src/index";
import { checkOutboundUrl } from "../../src/lib/outbound-url";
import { BASE, makeTenant } from "../support/harness";

const deployed = { allowLocalHttp: false };
const local = { allowLocalHttp: true };
const verdict = (url: string, opts = deployed) => checkOutboundUrl(url, opts);

/** Every spelling here names a loopback, private, link-local, reserved or metadata target. */
const REFUSED: Record<string, string[]> = {
  "IPv4 loopback and 'this network'": [
    "https://127.0.0.1/",
    "https://127.255.255.254/",
    "https://0.0.0.0/",
    "https://0/",
  ],
  "IPv4 loopback, decimal, hex and octal forms": [
    "https://2130706433/",
    "https://0x7f000001/",
    "https://0x7f.0x0.0x0.0x1/",
    "https://0177.0.0.1/",
    "https://017700000001/",
    "https://127.000.000.001/",
    "https://127.1/",
    "https://0177.1/",
  ],
  "IPv4 private, shared and link-local": [
    "https://10.0.0.1/",
    "https://167772161/",
    "https://172.16.5.4/",
    "https://172.31.255.255/",
    "https://192.168.1.1/",
    "https://0xc0a80101/",
    "https://100.64.0.1/",
    "https://169.254.0.1/",
  ],
  "IPv4 reserved and multicast": [
    "https://192.0.0.8/",
    "https://192.0.2.10/",
    "https://198.18.0.1/",
    "https://224.0.0.1/",
    "https://240.0.0.1/",
    "https://255.255.255.255/",
  ],
  "cloud metadata": [
    "https://169.254.169.254/latest/meta-data/",
    "https://169.254.169.254./",
    "https://2852039166/",
    "https://0xa9fea9fe/",
    "https://100.100.100.200/",
    "https://metadata.google.internal/computeMetadata/v1/",
    "https://METADATA.GOOGLE.INTERNAL./",
    "https://metadata/",
    "https://[fd00:ec2::254]/",
  ],
  "IPv6 loopback, unspecified, unique-local, link-local, multicast": [
    "https://[::1]/",
    "https://[0:0:0:0:0:0:0:1]/",
    "https://[::]/",
    "https://[fd00::1]/",
    "https://[fd12:3456:789a::1]/",
    "https://[fc00::1]/",
    "https://[fe80::1]/",
    "https://[fec0::1]/",
    "https://[ff02::1]/",
  ],
  "IPv6 forms carrying a blocked IPv4 address": [
    "https://[::ffff:127.0.0.1]/",
    "https://[::ffff:7f00:1]/",
    "https://[::ffff:a9fe:a9fe]/",
    "https://[::ffff:10.0.0.1]/",
    "https://[::127.0.0.1]/",
    "https://[64:ff9b::a00:1]/",
    "https://[64:ff9b:1::1]/",
    "https://[2002:7f00:1::]/",
    "https://[2002:a9fe:a9fe::1]/",
    "https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/",
  ],
  "local host names": [
    "https://localhost/",
    "https://LOCALHOST/",
    "https://localhost./",
    "https://api.localhost/",
    "https://printer.local/",
    "https://nas.home.arpa/",
    "https://intranet/",
  ],
  "not https, or carrying credentials": [
    "http://hooks.example.com/",
    "ftp://hooks.example.com/",
    "https://user:pass@hooks.example.com/",
    "not a url",
  ],
};

describe("receiver URL policy", () => {
  for (const [kind, urls] of Object.entries(REFUSED)) {
    it(`refuses ${kind}`, () => {
      for (const url of urls) {
        const v = verdict(url);
        expect(v.ok, `${url} -> ${JSON.stringify(v)}`).toBe(false);
      }
    });
  }

  it("accepts public https hosts and addresses, keeping the URL as parsed", () => {
    for (const url of [
      "https://hooks.example.com/x?y=1",
      "https://93.184.216.34/x",
      "https://[2606:4700::1111]/x",
      "https://172.32.0.1/",
      "https://100.128.0.1/",
      "https://[2001:db9::1]/",
      "https://[2002:5db8:d822::1]/",
    ]) {
      const v = verdict(url);
      expect(v.ok, `${url} -> ${JSON.stringify(v)}`).toBe(true);
    }
    expect(verdict("https://HOOKS.example.com:8443/a/../b")).toEqual({
      ok: true,
      url: "https://hooks.example.com:8443/b",
    });
  });

  it("the development setting admits only http(s) on localhost and 127.0.0.1", () => {
    for (const url of ["http://localhost:9999/hooks", "http://127.0.0.1:9999/hooks", "https://localhost/"])
      expect(verdict(url, local).ok, url).toBe(true);
    for (const url of [
      "http://[::1]:9999/",
      "http://10.0.0.1/",
      "https://169.254.169.254/",
      "http://localhost.example.com/",
      "ftp://localhost/",
    ]) {
      expect(verdict(url, local).ok, url).toBe(false);
    }
    for (const url of ["http://localhost:9999/hooks", "http://127.0.0.1:9999/hooks"])
      expect(verdict(url, deployed).ok, url).toBe(false);
  });
});

describe("registration in a deployed environment", () => {
  it("answers 422 webhook_url_not_allowed naming the reason", async () => {
    const t = await makeTenant();
    const deployedEnv = { ...env, ALLOW_HTTP_RECEIVERS: "false" } as Env;
    for (const url of [
      "http://localhost:9999/hook",
      "https://0x7f000001/",
      "https://[::ffff:127.0.0.1]/",
      "https://metadata.google.internal/",
      "https://169.254.169.254/",
    ]) {
      const ctx = createExecutionContext();
      const req = new Request(`${BASE}/api/v1/webhooks/endpoints`, {
        method: "POST",
        headers: { "X-API-Key": t.key, "Content-Type": "application/json", "X-Idempotency-Key": crypto.randomUUID() },
        body: JSON.stringify({ url }),
      });
      const res = await worker.fetch(req, deployedEnv, ctx);
      await waitOnExecutionContext(ctx);
      const json = (await res.json()) as { error: { code: string; details: { field: string; reason: string } } };
      expect(res.status, `${url}: ${JSON.stringify(json)}`).toBe(422);
      expect(json.error.code).toBe("webhook_url_not_allowed");
      expect(json.error.details.field).toBe("url");
    }
  });
});
