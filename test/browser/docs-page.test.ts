// The API reference page in a real browser, against `wrangler dev`, with every request
// that would leave this machine refused: the page must render the operations anyway.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Browser, chromium } from "playwright-core";
import { afterAll, describe, expect, it } from "vitest";
import { freePorts } from "../../scripts/free-ports.ts";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const SCREENSHOT = ".vitest/docs-page.png";
const READY_TIMEOUT_MS = 90_000;
const STOP_TIMEOUT_MS = 10_000;
/** What the page check reads in the browser (the tests are typed without the DOM library). */
interface PageElement {
  tagName: string;
  type?: string;
  value?: string;
  placeholder?: string;
  textContent: string | null;
  childElementCount: number;
  scrollWidth: number;
  clientWidth: number;
}
interface PageGlobals {
  document: { querySelectorAll(selector: string): ArrayLike<PageElement>; documentElement: { outerHTML: string } };
  getComputedStyle(element: PageElement): { display: string; visibility: string };
}

/** The longest path of the sandbox description: the page must show it whole. */
const LONG_PATH = "/api/v1/test_helpers/listings/{listing_number}/appointments/{appointment_id}/reschedule";

const isLocal = (url: string) => {
  const { protocol, hostname } = new URL(url);
  if (!["http:", "https:", "ws:", "wss:"].includes(protocol)) return true; // data:, blob:, about:
  return hostname === "127.0.0.1" || hostname === "localhost" || hostname === "[::1]";
};

/** `wrangler dev` on its own ports and its own state directory, so it meets no other run. */
class DevServer {
  readonly log: string[] = [];
  #child: ChildProcess | undefined;
  #exited: Promise<void> | undefined;

  constructor(
    readonly origin: string,
    private readonly stateDir: string,
  ) {}

  async start(port: number, inspectorPort: number) {
    const child = spawn(
      process.execPath,
      [
        "node_modules/wrangler/bin/wrangler.js",
        "dev",
        "--ip",
        "127.0.0.1",
        "--port",
        String(port),
        "--inspector-port",
        String(inspectorPort),
        "--persist-to",
        join(this.stateDir, "state"),
        "--show-interactive-dev-session=false",
      ],
      {
        detached: true, // its own process group, so stop() ends workerd with it
        stdio: ["ignore", "pipe", "pipe"],
        env: {
          ...process.env,
          WRANGLER_SEND_METRICS: "false",
          DO_NOT_TRACK: "1",
          XDG_CONFIG_HOME: join(this.stateDir, "config"),
          WRANGLER_LOG_PATH: join(this.stateDir, "logs"),
          SECRET_KEY: "browser-test-secret-key-0123456789abcdef",
        },
      },
    );
    this.#child = child;
    this.#exited = new Promise((resolve) => child.once("exit", () => resolve()));
    // Last resort should the test process end without stop(): never leave the server behind.
    const killOnExit = () => this.#signal("SIGKILL");
    process.once("exit", killOnExit);
    child.once("exit", () => process.off("exit", killOnExit));
    for (const stream of [child.stdout, child.stderr]) stream?.on("data", (d: Buffer) => this.log.push(d.toString()));

    const deadline = Date.now() + READY_TIMEOUT_MS;
    while (Date.now() < deadline) {
      if (child.exitCode !== null) throw new Error(`wrangler dev exited (${child.exitCode}):\n${this.log.join("")}`);
      try {
        const res = await fetch(`${this.origin}/api/v1/openapi.json`, { signal: AbortSignal.timeout(5_000) });
        if (res.ok) return;
      } catch {
        // not listening yet
      }
      await new Promise((r) => setTimeout(r, 300));
    }
    throw new Error(`wrangler dev did not answer within ${READY_TIMEOUT_MS / 1000} s:\n${this.log.join("")}`);
  }

  async stop() {
    const child = this.#child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    this.#signal("SIGTERM");
    const stopped = await Promise.race([
      this.#exited!.then(() => true),
      new Promise<boolean>((r) => setTimeout(() => r(false), STOP_TIMEOUT_MS)),
    ]);
    if (!stopped) this.#signal("SIGKILL");
  }

  /** Signals the server's process group: wrangler and the workerd it started. */
  #signal(signal: NodeJS.Signals) {
    if (!this.#child?.pid) return;
    try {
      process.kill(-this.#child.pid, signal);
    } catch {
      // already gone
    }
  }
}

describe("the API reference page in a browser", () => {
  let stateDir: string | undefined;
  let server: DevServer | undefined;
  let browser: Browser | undefined;

  // Runs after a failed or timed-out test too.
  afterAll(async () => {
    await browser?.close().catch(() => {});
    await server?.stop();
    if (stateDir) rmSync(stateDir, { recursive: true, force: true });
  });

  it("lists the operations with every request to another host refused", async () => {
    expect(
      existsSync(CHROMIUM),
      `No Chromium at ${CHROMIUM}: install Debian's package (apt-get install -y chromium), ` +
        "or point CHROMIUM_PATH at a Chromium binary.",
    ).toBe(true);
    stateDir = mkdtempSync(join(tmpdir(), "alms-browser-"));
    const [port, inspectorPort] = (await freePorts(2)) as [number, number];
    server = new DevServer(`http://127.0.0.1:${port}`, stateDir);
    await server.start(port, inspectorPort);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking"],
      timeout: 30_000,
    });

    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, serviceWorkers: "block" });
    const requested: string[] = [];
    const pageErrors: string[] = [];
    context.on("request", (req) => requested.push(req.url()));
    await context.route("**/*", (route) =>
      isLocal(route.request().url()) ? route.continue() : route.abort("internetdisconnected"),
    );
    const page = await context.newPage();
    page.on("websocket", (ws) => requested.push(ws.url()));
    page.on("pageerror", (err) => pageErrors.push(String(err)));

    const res = await page.goto(`${server.origin}/api/v1/docs`, { waitUntil: "load", timeout: 30_000 });
    expect(res?.status()).toBe(200);
    const summaries = ["Create a listing", "List your agency's listings"];
    const visible = (text: string) =>
      page
        .getByText(text, { exact: true })
        .first()
        .waitFor({ state: "visible", timeout: 60_000 })
        .then(
          () => true,
          () => false,
        );
    const shown = Object.fromEntries(await Promise.all(summaries.map(async (s) => [s, await visible(s)] as const)));
    await page.waitForLoadState("networkidle", { timeout: 10_000 }).catch(() => {});
    mkdirSync(".vitest", { recursive: true });
    await page.screenshot({ path: SCREENSHOT, timeout: 10_000 });
    await context.close();

    const external = requested.filter((url) => !isLocal(url));
    const seen = JSON.stringify({ shown, external, pageErrors }, null, 2);
    expect(shown, seen).toEqual(Object.fromEntries(summaries.map((s) => [s, true])));
    expect(external, `requests that would have left this machine: ${seen}`).toEqual([]);
    expect(pageErrors, `errors thrown in the page: ${seen}`).toEqual([]);
    const paths = requested.map((url) => new URL(url).pathname);
    expect(paths, seen).toContain("/api/v1/docs/reference.js");
    expect(paths, seen).toContain("/api/v1/openapi.json");
  });

  it("leaves the key field empty, shows the license whole and wraps long paths", async () => {
    expect(server && browser, "the first test starts the server and the browser").toBeTruthy();
    const context = await browser!.newContext({ viewport: { width: 1280, height: 900 }, serviceWorkers: "block" });
    const sentKeys: (string | undefined)[] = [];
    await context.route("**/*", (route) => {
      const req = route.request();
      if (!isLocal(req.url())) return route.abort("internetdisconnected");
      if (new URL(req.url()).pathname === "/api/v1/listings") sentKeys.push(req.headers()["x-api-key"]);
      return route.continue();
    });
    const page = await context.newPage();
    await page.goto(`${server!.origin}/api/v1/docs`, { waitUntil: "load", timeout: 30_000 });
    await page.getByText("Create a listing", { exact: true }).first().waitFor({ state: "visible", timeout: 60_000 });
    await page.getByText("Test helpers", { exact: true }).first().click();
    await page.getByText(LONG_PATH, { exact: true }).first().waitFor({ state: "attached", timeout: 30_000 });

    const seen = await page.evaluate((longPath) => {
      const { document, getComputedStyle } = globalThis as unknown as PageGlobals;
      const all = Array.from(document.querySelectorAll("body *"));
      const keyFields = all
        .filter((e) => e.tagName === "INPUT" && e.type !== "checkbox")
        .map((e) => ({ value: e.value ?? "", placeholder: e.placeholder ?? "" }));
      const license = all
        .filter((e) => !e.childElementCount && e.textContent?.trim() === "Proprietary")
        .map((e) => ({ display: getComputedStyle(e).display, cut: e.scrollWidth > e.clientWidth + 1 }));
      const cutPaths = all
        .filter((e) => /^(Request Example for )?(get|put|post|patch|delete)?\s*\/api\/v1\//.test(e.textContent ?? ""))
        .filter((e) => (e.textContent ?? "").length < 200 && getComputedStyle(e).visibility !== "hidden")
        .filter((e) => e.clientWidth > 1 && e.scrollWidth > e.clientWidth + 1)
        .map((e) => e.textContent);
      const longPathShown = all.some((e) => !e.childElementCount && e.textContent?.trim() === longPath);
      const demoToken = document.documentElement.outerHTML.includes("QUxMIFlPVVIgQkFTRSBBUkUgQkVMT05HIFRPIFVT");
      return { keyFields, license, cutPaths, longPathShown, demoToken };
    }, LONG_PATH);
    const report = JSON.stringify(seen, null, 2);
    expect(
      seen.keyFields.filter((f) => f.placeholder.startsWith("sk_test_")),
      report,
    ).toEqual([{ value: "", placeholder: "sk_test_…" }]);
    expect(seen.demoToken, report).toBe(false);
    expect(seen.license, report).toEqual([{ display: expect.not.stringMatching(/^none$/), cut: false }]);
    expect(seen.longPathShown, report).toBe(true);
    expect(seen.cutPaths, report).toEqual([]);

    // "Test Request" with the field left empty sends no key at all, never a demo token.
    await page.getByText("Listings", { exact: true }).first().click();
    // On a busy machine the first click can land before the page wires its buttons: click again until the
    // request panel opens (three tries), then send.
    const send = page.getByRole("button", { name: /^Send/ }).first();
    for (let tries = 0; tries < 3 && !(await send.isVisible()); tries++) {
      await page
        .getByRole("button", { name: /Test Request/ })
        .first()
        .click();
      await send.waitFor({ state: "visible", timeout: 10_000 }).catch(() => {});
    }
    await send.click();
    await expect.poll(() => sentKeys.length, { timeout: 15_000 }).toBeGreaterThan(0);
    expect(
      sentKeys.every((key) => !key),
      JSON.stringify(sentKeys),
    ).toBe(true);
    await context.close();
  });
});
