import { readFileSync } from "node:fs";
import { join } from "node:path";
import { launchChromium, openInCrossSiteFrame } from "@emailsvc/testing";
import type { Browser, Page } from "playwright-core";
import { browserSignIn, createMember, sessionCall, signIn } from "./support/dashboard-session";
import { eventually, startTestPlatform, type TestPlatform } from "./support/platform-client";

// The dashboard's defences, checked where they act: the headers of every
// /dashboard response (a strict CSP without inline or eval'd script, framing
// refused), the built index.html (no inline script or handler), Chromium
// refusing to show it in another site's frame, and, while a member clicks
// through every page, no request to another origin and no CSP violation.

let t: TestPlatform;
let browser: Browser;
beforeAll(async () => {
  t = await startTestPlatform("dashboard-security");
  browser = await launchChromium();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await t?.close();
});

/** The directives of a Content-Security-Policy header, by name. */
function directives(csp: string | null): Map<string, string[]> {
  const parsed = new Map<string, string[]>();
  for (const part of (csp ?? "").split(";")) {
    const [name, ...values] = part.trim().split(/\s+/);
    if (name) parsed.set(name.toLowerCase(), values);
  }
  return parsed;
}

/** What a response's headers must say, whatever /dashboard path it answers. */
function expectLockedDown(path: string, res: Response): void {
  const csp = directives(res.headers.get("content-security-policy"));
  const scripts = csp.get("script-src") ?? csp.get("default-src");
  expect({ path, scriptSrc: scripts }).toEqual({ path, scriptSrc: ["'self'"] });
  expect({ path, unsafe: scripts?.filter((s) => /unsafe-(inline|eval|hashes)|wasm-unsafe-eval|strict-dynamic|^\*|^https?:|^data:/.test(s)) }).toEqual({ path, unsafe: [] });
  expect({ path, defaultSrc: csp.get("default-src") }).toEqual({ path, defaultSrc: ["'none'"] });
  expect({ path, connectSrc: csp.get("connect-src") }).toEqual({ path, connectSrc: ["'self'"] });
  expect({ path, frameAncestors: csp.get("frame-ancestors") }).toEqual({ path, frameAncestors: ["'none'"] });
  expect({ path, baseUri: csp.get("base-uri") }).toEqual({ path, baseUri: ["'none'"] });
  expect({ path, xfo: res.headers.get("x-frame-options") }).toEqual({ path, xfo: "DENY" });
  expect({ path, nosniff: res.headers.get("x-content-type-options") }).toEqual({ path, nosniff: "nosniff" });
}

describe("the dashboard's responses", () => {
  it("every /dashboard response carries the strict CSP and refuses framing: pages, assets, 304s, a missing asset", async () => {
    const index = await fetch(`${t.url}/dashboard/`);
    expect(index.status).toBe(200);
    const html = await index.text();
    const assets = [...html.matchAll(/(?:src|href)="(\/dashboard\/[^"]+)"/g)].map((m) => m[1]!);
    expect(assets.some((a) => a.endsWith(".js"))).toBe(true);
    expect(assets.some((a) => a.endsWith(".css"))).toBe(true);
    // Every file of the build (the chunks of each page too), as the gateway loaded them.
    const build = JSON.parse(readFileSync(join(__dirname, "..", "..", "dashboard", "dist", "build.json"), "utf8")) as { files: string[] };
    const chunks = build.files.filter((f) => f.endsWith(".js")).map((f) => `/dashboard/${f}`);
    const paths = [
      "/dashboard/",
      "/dashboard/sign-in",
      "/dashboard/webhooks/whk_123",
      "/dashboard/sending-domains?x=%3Cscript%3E",
      "/dashboard/favicon.svg",
      ...new Set([...assets, ...chunks]),
      "/dashboard/assets/app-doesnotexist.js",
    ];
    for (const path of paths) {
      const res = await fetch(`${t.url}${path}`);
      await res.arrayBuffer();
      expect({ path, status: res.status }).toEqual({ path, status: path.includes("doesnotexist") ? 404 : 200 });
      expectLockedDown(path, res);
    }
    // A revalidation (304) and a HEAD carry them too.
    const etag = index.headers.get("etag")!;
    const revalidated = await fetch(`${t.url}/dashboard/`, { headers: { "if-none-match": etag } });
    expect(revalidated.status).toBe(304);
    expectLockedDown("/dashboard/ (304)", revalidated);
    const head = await fetch(`${t.url}/dashboard/sign-in`, { method: "HEAD" });
    expectLockedDown("/dashboard/sign-in (HEAD)", head);
  });

  it("index.html has no inline script, no event-handler attribute, and loads scripts from this origin only", async () => {
    const html = await (await fetch(`${t.url}/dashboard/`)).text();
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/gi)];
    expect(scripts.length).toBeGreaterThan(0);
    for (const [, attributes, body] of scripts) {
      expect({ attributes, body: body!.trim() }).toEqual({ attributes, body: "" });
      expect(attributes).toMatch(/\bsrc="\/dashboard\/assets\/[^"]+\.js"/);
    }
    expect(html).not.toMatch(/\son[a-z]+\s*=/i);
    expect(html).not.toMatch(/javascript:/i);
    expect(html).not.toMatch(/(?:src|href)="(?:https?:)?\/\//i);
  });
});

describe("the dashboard in Chromium", () => {
  it("a page of another origin cannot frame it: Chromium refuses (frame-ancestors, X-Frame-Options)", async () => {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await expect(openInCrossSiteFrame(page, `${t.url}/dashboard/sign-in`, { title: "Dashboard" })).rejects.toThrow(/refused to be framed/);
      // The control: the same embedding of a page that allows framing works (the check can tell).
      const framed = await openInCrossSiteFrame(page, `${t.url}/api/v1/openapi.json`, { title: "Document" });
      await framed.close();
    } finally {
      await context.close();
    }
  });

  it("the CSP blocks an injected inline script, and the violation is seen (the detector the page tour relies on)", async () => {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      const watch = await watchPage(page, t.url);
      await page.goto(`${t.url}/dashboard/sign-in`);
      await page.getByRole("heading", { name: "Sign in" }).waitFor();
      // An inline script put into the page (as an injection would): the CSP must not run it.
      const ran = await page.evaluate(
        `(() => { const script = document.createElement("script"); script.textContent = "window.injected = true"; document.body.append(script); return window.injected === true; })()`,
      );
      expect(ran).toBe(false);
      await eventually(async () => watch.violations(), (v) => v.length > 0);
      expect(watch.violations()[0]).toMatchObject({ directive: expect.stringMatching(/^script-src/) });
    } finally {
      await context.close();
    }
  });
});

describe("a member clicking through every page", () => {
  it("makes no request to another origin and meets no CSP violation, in both languages and modes", async () => {
    const admin = await createMember(t, "admin");
    const session = await signIn(t, admin);
    // Something behind the detail pages.
    const domain = await sessionCall(t, session, "POST", "/api/v1/domains", { body: { name: "tour.acme-dashboard.example.com" } });
    const webhook = await sessionCall(t, session, "POST", "/api/v1/webhooks", { body: { url: "https://hooks.example.com/tour", events: ["*"] } });
    expect([domain.status, webhook.status]).toEqual([201, 201]);
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    context.setDefaultTimeout(15_000);
    try {
      await browserSignIn(context, t, admin);
      const page = await context.newPage();
      const watch = await watchPage(page, t.url);
      const visited: string[] = [];
      const tour = async () => {
        await page.goto(`${t.url}/dashboard/`);
        await page.getByRole("heading", { level: 1 }).waitFor();
        const nav = page.getByRole("navigation");
        const links = await nav.getByRole("link").all();
        expect(links.length).toBeGreaterThanOrEqual(10);
        // Every page the navigation names, by its link (a click inside the app, as a member moves).
        for (let i = 0; i < links.length; i++) {
          const link = nav.getByRole("link").nth(i);
          visited.push((await link.getAttribute("href"))!);
          await link.click();
          await page.waitForURL(`${t.url}${visited.at(-1)}`);
          await page.getByRole("heading", { level: 1 }).waitFor();
          // Let the page's own loads finish (lists, chunks) before the next click.
          await page.waitForLoadState("networkidle");
        }
        for (const path of [`/sending-domains/${domain.body.id}`, `/webhooks/${webhook.body.id}`, "/profile", "/no-such-page"]) {
          await page.goto(`${t.url}/dashboard${path}`);
          await page.getByRole("heading", { level: 1 }).waitFor();
          await page.waitForLoadState("networkidle");
          visited.push(path);
        }
      };
      await tour();
      // Again in German and in test mode (another catalogue chunk, other data).
      await page.getByLabel("Language").selectOption("de");
      await page.getByText("Test", { exact: true }).click();
      await tour();
      expect(visited.length).toBeGreaterThanOrEqual(28);
      expect(watch.foreign()).toEqual([]);
      expect(watch.violations()).toEqual([]);
    } finally {
      await context.close();
    }
  }, 90_000);
});

export interface PageWatch {
  /** Requests to another origin than the platform's (none expected). */
  foreign(): string[];
  /** securitypolicyviolation events the pages reported. */
  violations(): Array<{ directive: string; blocked: string }>;
}

/**
 * Watches a page: every request it makes (Playwright's request events, which
 * see what the browser asks for, frames and workers included) and every CSP
 * violation its documents report (securitypolicyviolation, listened for by a
 * script the browser runs before the page's own).
 */
export async function watchPage(page: Page, origin: string): Promise<PageWatch> {
  const foreign: string[] = [];
  const seen: Array<{ directive: string; blocked: string }> = [];
  const own = new URL(origin).origin;
  page.context().on("request", (request) => {
    const url = request.url();
    if (url.startsWith("data:") || url.startsWith("about:") || url.startsWith("blob:")) return;
    if (new URL(url).origin !== own) foreign.push(url);
  });
  await page.exposeFunction("reportCspViolation", (directive: string, blocked: string) => void seen.push({ directive, blocked }));
  await page.addInitScript({
    content: `document.addEventListener("securitypolicyviolation", (event) => window.reportCspViolation(event.effectiveDirective, event.blockedURI));`,
  });
  return { foreign: () => [...foreign], violations: () => [...seen] };
}
