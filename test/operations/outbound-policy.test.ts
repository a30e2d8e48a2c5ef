import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { connectCalendar } from "../../src/calendar/connections";
import { PROVIDER_BODY_LIMIT } from "../../src/calendar/outbound";
import { keyringOf } from "../../src/lib/crypto/keyring";
import { checkOutboundUrl } from "../../src/lib/outbound-url";
import { putObject } from "../../src/media/delivery/s3-put";
import { BASE, call, db, direct, expectError, internal, makeTenant, mockFetch } from "../support/harness";

afterEach(() => vi.restoreAllMocks());

const deployed = { allowLocalHttp: false };
const local = { allowLocalHttp: true };

/** The Worker with a deployed environment's outbound setting (the tests run with local development's). */
const deployedFetch = (req: Request) => direct(req, { ALLOW_HTTP_RECEIVERS: "false" });

/** Every outbound fetch, recorded as the Request the Worker built; answered by `answer`. */
function interceptFetch(answer: (req: Request) => Response | Promise<Response>) {
  const seen: Request[] = [];
  mockFetch((req) => {
    seen.push(req);
    return answer(req);
  });
  return seen;
}

const NOT_RENDERABLE = [
  "javascript:alert(1)",
  "JavaScript:alert(document.cookie)",
  "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
  "file:///etc/passwd",
  "http://cdn.example.com/front.jpg",
  "ftp://cdn.example.com/front.jpg",
  "//cdn.example.com/front.jpg",
  "not a url",
];

describe("URLs the service renders: https only", () => {
  const tour = (extra: Record<string, unknown>) => ({
    address: "12 Harbour Street",
    city: "Portside",
    state: "CA",
    zipcode: "94110",
    ...extra,
  });

  it("a tour image URL that is not https is refused, and no tour is created", async () => {
    const t = await makeTenant();
    for (const url of NOT_RENDERABLE) {
      const r = await call("/api/v1/tours", { key: t.key, body: tour({ images: [{ url }] }) });
      expectError(r, 422, "validation_nested_error");
      expect(r.json.error.details.errors[0].children[0], `${url}: ${r.text}`).toMatchObject({
        field: "images[0].url",
        code: "validation_string_pattern",
      });
    }
    const list = await call("/api/v1/tours", { key: t.key });
    expect(list.json.total, list.text).toBe(0);
  });

  it("the virtual tour URL is https only", async () => {
    const t = await makeTenant();
    for (const url of NOT_RENDERABLE) {
      const r = await call("/api/v1/tours", { key: t.key, body: tour({ virtual_tour_url: url }) });
      expectError(r, 422, "validation_string_pattern");
      expect(r.json.error.details.errors[0].field, r.text).toBe("virtual_tour_url");
    }
  });

  it("an image object is strict: an unknown key is refused", async () => {
    const t = await makeTenant();
    const url = "https://cdn.example.com/front.jpg";
    for (const extra of [{ onclick: "alert(1)" }, { href: "javascript:alert(1)" }, { constructor: 1 }]) {
      const r = await call("/api/v1/tours", { key: t.key, body: tour({ images: [{ url, ...extra }] }) });
      expectError(r, 422, "validation_nested_error");
      expect(r.json.error.details.errors[0].children[0], r.text).toMatchObject({
        field: `images[0].${Object.keys(extra)[0]}`,
        code: "validation_unknown_field",
      });
    }
    const ok = await call("/api/v1/tours", {
      key: t.key,
      body: tour({ images: [{ url, caption: "Front" }], virtual_tour_url: "https://my.matterport.com/show/?m=x" }),
    });
    expect(ok.status, ok.text).toBe(201);
    expect(ok.json.images).toEqual([{ url, caption: "Front" }]);
  });

  it("the OpenAPI description says so: format uri, and closed image objects", async () => {
    const doc = (await call("/api/v1/openapi.json")).json;
    const create = doc.components.schemas.CreateTour;
    expect(create.properties.virtual_tour_url.format).toBe("uri");
    const image = doc.components.schemas.TourImageInput;
    expect(image.additionalProperties).toBe(false);
    expect(image.properties.url.format).toBe("uri");
  });
});

describe("the outbound policy shared by receivers, storage destinations and calendar feeds", () => {
  it("refuses IP literals written in alternate forms, even of public addresses", () => {
    for (const url of [
      "https://1572395042/", // 93.184.216.34 as one decimal number
      "https://0x5db8d822/",
      "https://0135.0270.0330.042/",
      "https://93.184.55330/",
      "https://%39%33.184.216.34/",
      "https://[::ffff:93.184.216.34]/",
      "https://[::ffff:5db8:d822]/",
      "https://[::93.184.216.34]/",
    ]) {
      const v = checkOutboundUrl(url, deployed);
      expect(v.ok, `${url} -> ${JSON.stringify(v)}`).toBe(false);
    }
    expect(checkOutboundUrl("https://93.184.216.34/feed", deployed).ok).toBe(true);
    expect(checkOutboundUrl("http://2130706433:9000/", local).ok).toBe(false);
    expect(checkOutboundUrl("http://127.0.0.1:9000/", local).ok).toBe(true);
  });
});

describe("media delivery destinations", () => {
  const destination = (endpoint_url: string) => ({
    endpoint_url,
    bucket: "agent-bucket",
    region: "us-east-1",
    access_key_id: "AKID",
    secret_access_key: "secret",
  });

  it("refuse private, loopback, link-local and metadata endpoints, and http where deployed", async () => {
    const t = await makeTenant();
    for (const url of [
      "https://10.0.0.1",
      "https://192.168.1.20:9000",
      "https://169.254.169.254",
      "https://2130706433",
      "https://[::1]:9000",
      "https://[::ffff:10.0.0.1]",
      "https://localhost:9000",
      "https://metadata.google.internal",
      "http://s3.example.com",
    ]) {
      const r = await deployedFetch(
        new Request(`${BASE}/internal/v1/users/${t.agent.id}/delivery-destination`, {
          method: "PUT",
          headers: { Authorization: "Bearer test-operator-token", "Content-Type": "application/json" },
          body: JSON.stringify(destination(url)),
        }),
      );
      expect(r.status, `${url}: ${r.text}`).toBe(422);
      expect(r.json.error.code, url).toBe("invalid_delivery_destination");
      expect(r.json.error.details.field).toBe("endpoint_url");
    }
  });

  it("local development admits a MinIO on this machine over http", async () => {
    const t = await makeTenant();
    const r = await internal(`/internal/v1/users/${t.agent.id}/delivery-destination`, {
      method: "PUT",
      body: destination("http://127.0.0.1:9000"),
    });
    expect(r.status, r.text).toBe(200);
  });

  const dest = (endpointUrl: string) => ({
    endpointUrl,
    bucket: "agent-bucket",
    region: "us-east-1",
    addressingStyle: "path" as const,
    accessKeyId: "AKID",
    secretAccessKey: "secret",
  });
  const meta = { contentType: "image/jpeg", size: 3 };

  it("are checked again at delivery time: a refused address is never fetched", async () => {
    const seen = interceptFetch(() => new Response(null, { status: 200 }));
    for (const endpoint of ["https://169.254.169.254", "http://127.0.0.1:9000", "https://10.1.2.3"]) {
      const outcome = await putObject(dest(endpoint), "a/b.jpg", "abc", meta, deployed);
      expect(outcome, endpoint).toMatchObject({ ok: false, permanent: true });
    }
    expect(seen).toHaveLength(0);
  });

  it("follow no redirect: a 3xx is a failure, and the PUT is sent with redirect manual", async () => {
    const seen = interceptFetch(
      () => new Response(null, { status: 307, headers: { Location: "https://169.254.169.254/x" } }),
    );
    const outcome = await putObject(dest("https://s3.example.com"), "a/b.jpg", "abc", meta, deployed);
    expect(outcome).toMatchObject({ ok: false, permanent: true });
    expect(seen).toHaveLength(1);
    expect(seen[0]!.redirect).toBe("manual");
    expect(seen[0]!.url).toBe("https://s3.example.com/agent-bucket/a/b.jpg");
  });
});

describe("ICS calendar feeds", () => {
  const FROM = "2026-11-30T00:00:00-08:00";
  const TO = "2026-12-01T00:00:00-08:00";
  const availability =
    `/api/v1/scheduling/availability?from=${encodeURIComponent(FROM)}&to=${encodeURIComponent(TO)}` +
    "&duration_minutes=60&timezone=UTC";

  it("refuse private, loopback, link-local and metadata feed URLs when connected", async () => {
    const t = await makeTenant();
    for (const feed_url of [
      "https://10.0.0.1/feed.ics",
      "https://169.254.169.254/latest/meta-data/",
      "https://0x7f000001/feed.ics",
      "https://[fd00::1]/feed.ics",
      "https://calendar.internal/feed.ics",
      "http://calendar.example.com/feed.ics",
    ]) {
      const r = await deployedFetch(
        new Request(`${BASE}/internal/v1/users/${t.owner.id}/calendar`, {
          method: "PUT",
          headers: { Authorization: "Bearer test-operator-token", "Content-Type": "application/json" },
          body: JSON.stringify({ provider: "ics", feed_url }),
        }),
      );
      expect(r.status, `${feed_url}: ${r.text}`).toBe(422);
      expect(r.json.error.code, feed_url).toBe("calendar_feed_not_allowed");
    }
  });

  it("are checked again when fetched: a feed refused by the policy is never called", async () => {
    const t = await makeTenant();
    // Connected while local development allowed it; the deployed policy refuses it at fetch time.
    await connectCalendar(
      db(),
      keyringOf(env),
      { id: t.owner.id, agencyId: t.agencyId },
      { provider: "ics", feedUrl: "http://127.0.0.1:9/feed.ics" },
      local,
    );
    const seen = interceptFetch(() => new Response("BEGIN:VCALENDAR\r\nEND:VCALENDAR"));
    const r = await deployedFetch(new Request(`${BASE}${availability}`, { headers: { "X-API-Key": t.key } }));
    expect(r.status, r.text).toBe(502);
    expect(r.json.error.code).toBe("calendar_provider_error");
    expect(seen).toHaveLength(0);
  });

  it("follow no redirect: a 3xx answer is calendar_provider_error", async () => {
    const t = await makeTenant();
    await internal(`/internal/v1/users/${t.owner.id}/calendar`, {
      method: "PUT",
      body: { provider: "ics", feed_url: "https://cal.example.com/feed.ics" },
    });
    const seen = interceptFetch(
      () => new Response(null, { status: 302, headers: { Location: "http://169.254.169.254/" } }),
    );
    const r = await call(availability, { key: t.key });
    expectError(r, 502, "calendar_provider_error");
    expect(r.json.error.details.provider_status).toBe(302);
    expect(seen.map((req) => req.redirect)).toEqual(["manual"]);
  });

  it("are read at most 5 MiB: a larger feed is calendar_provider_error, cut off while it streams", async () => {
    const t = await makeTenant();
    await internal(`/internal/v1/users/${t.owner.id}/calendar`, {
      method: "PUT",
      body: { provider: "ics", feed_url: "https://cal.example.com/feed.ics" },
    });
    const total = 64 * 1024 * 1024;
    let pulled = 0;
    interceptFetch(
      () =>
        new Response(
          new ReadableStream<Uint8Array>(
            {
              pull(controller) {
                if (pulled >= total) return controller.close();
                pulled += 64 * 1024;
                controller.enqueue(new Uint8Array(64 * 1024).fill(0x41));
              },
            },
            { highWaterMark: 0 },
          ),
        ),
    );
    const r = await call(availability, { key: t.key });
    expectError(r, 502, "calendar_provider_error");
    expect(r.json.error.details.limit_bytes).toBe(PROVIDER_BODY_LIMIT);
    expect(pulled).toBeLessThan(total);
  });
});
