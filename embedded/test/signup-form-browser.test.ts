import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { expectNoAxeViolations, launchChromium } from "@emailsvc/testing";
import type { Browser, BrowserContext } from "playwright-core";
import { GENEROUS_RATE_LIMIT_ENV } from "../../services/gateway/test/support/harness";
import { eventually, startTestPlatform, type TestPlatform } from "./support/platform-client";

// A signup form as a person meets it: the snippet of GET /api/v1/forms/{id}
// pasted into a page of the account's own site (served here on 127.0.0.1
// with a port of its own: another origin than the portal), filled in and
// sent in headless Chromium. Without JavaScript on the site, the portal's
// check page solves the proof of work and posts again; with the optional
// script, the site's page does it. The person is pending until they click
// the confirmation mail's link (double opt-in, the account's default). A page
// of another origin posting the same snippet is refused. embedded/test/signup-forms.test.ts covers the bots.

interface Site {
  origin: string;
  server: Server;
}

/** A site serving `html` at `/`, and plain pages at /thanks and /oops (which show their query). */
async function serveSite(html: () => string): Promise<Site> {
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://site.invalid");
    const page = (title: string, body: string) =>
      `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${title}</title></head><body><main><h1>${title}</h1>${body}</main></body></html>`;
    res.writeHead(url.pathname === "/" || url.pathname === "/thanks" || url.pathname === "/oops" ? 200 : 404, { "content-type": "text/html; charset=utf-8" });
    if (url.pathname === "/") res.end(page("Our shop", html()));
    else if (url.pathname === "/thanks") res.end(page("Thanks", "<p>Check your inbox.</p>"));
    else res.end(page("Oops", `<p id="error">${url.searchParams.get("error") ?? ""}</p>`));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

let t: TestPlatform;
let browser: Browser;
let context: BrowserContext;
let site: Site;
let other: Site;
let snippet = "";
let formId = "";
beforeAll(async () => {
  t = await startTestPlatform("signup-form-browser", { ...GENEROUS_RATE_LIMIT_ENV, SIGNUP_POW_MAX_NUMBER: "20000" });
  browser = await launchChromium();
  context = await browser.newContext();
  site = await serveSite(() => snippet);
  other = await serveSite(() => snippet);
  await t.call("POST", "/api/v1/tags", { body: { name: "news", is_public: true } });
  const form = await t.call("POST", "/api/v1/forms", {
    body: {
      name: "Shop footer",
      tags: ["news"],
      fields: [{ name: "first_name", label: "First name", type: "text", required: true }],
      success_url: `${site.origin}/thanks`,
      error_url: `${site.origin}/oops`,
      allowed_origins: [site.origin],
      consent_text: "Send me the shop's newsletter.",
    },
  });
  expect(form.status).toBe(201);
  formId = form.body.id;
  snippet = form.body.snippet;
});
afterAll(async () => {
  await browser?.close();
  await Promise.all([site, other].filter(Boolean).map((s) => new Promise((resolve) => s.server.close(resolve))));
  await t?.close();
});

const subscriberNamed = async (email: string) =>
  (await t.call("GET", "/api/v1/subscribers?limit=500")).body.items.filter((s: { email: string }) => s.email === email) as Array<{ id: string; status: string; tags: string[] }>;

async function fillAndSend(origin: string, email: string): Promise<{ url: string; visited: string[] }> {
  const page = await context.newPage();
  const visited: string[] = [];
  page.on("framenavigated", (frame) => {
    if (frame === page.mainFrame()) visited.push(new URL(frame.url()).pathname);
  });
  await page.goto(`${origin}/`);
  await page.getByLabel("Email address").fill(email);
  await page.getByLabel("First name").fill("Ada");
  await page.getByRole("button", { name: "Subscribe" }).click();
  await page.waitForURL((url) => url.pathname === "/thanks" || url.pathname === "/oops" || (url.pathname.startsWith("/subscribe/") && !url.pathname.endsWith(formId)), { timeout: 30_000 });
  const url = page.url();
  await page.close();
  return { url, visited };
}

describe("a signup form in Chromium", () => {
  it("the snippet on the account's page is accessible: labelled fields, the honeypot out of reach", async () => {
    const page = await context.newPage();
    await page.goto(`${site.origin}/`);
    await expectNoAxeViolations(page);
    // Out of the accessibility tree and off screen (but not display:none, which some bots skip).
    await expect(page.getByRole("textbox", { name: "Leave this field empty" }).count()).resolves.toBe(0);
    await expect(page.getByRole("textbox", { name: "Email address" }).count()).resolves.toBe(1);
    await expect(page.locator('input[name="website"]').isVisible()).resolves.toBe(true);
    await expect(page.locator('input[name="website"]').evaluate((el) => el.getBoundingClientRect().right < 0)).resolves.toBe(true);
    await page.close();
  });

  it("posted from the account's site without JavaScript there: the portal's check page does the work, the person lands on the thank-you page, pending until they confirm by mail", async () => {
    const { url, visited } = await fillAndSend(site.origin, "reader@example.com");
    expect(url).toBe(`${site.origin}/thanks`);
    // Through the portal's check page (it posted the fields again itself).
    expect(visited.some((path) => path === `/subscribe/${formId}`)).toBe(true);
    const [reader] = await eventually(() => subscriberNamed("reader@example.com"), (found) => found.length === 1);
    expect(reader).toMatchObject({ status: "pending", tags: ["news"] });

    // Double opt-in (the account's default): the confirmation mail, its link, its button; then active.
    const sent = await eventually(
      async () => ((await t.call("GET", "/api/v1/emails?limit=500")).body.items as Array<{ id: string; to: string; status: string }>).filter((e) => e.to === "reader@example.com" && e.status === "sent"),
      (found) => found.length === 1,
    );
    const html = (await t.call("GET", `/api/v1/emails/${sent[0]!.id}/sandbox`)).body.html as string;
    const link = /href="([^"]*\/confirm\?[^"]+)"/.exec(html)![1]!.replace(/&#x3D;/g, "=").replace(/&amp;/g, "&").replace("localhost", "127.0.0.1");
    const page = await context.newPage();
    await page.goto(link);
    await page.getByRole("button", { name: "Yes, subscribe me" }).click();
    await page.waitForLoadState("load");
    await expect(page.title()).resolves.toBe("Subscription confirmed");
    await page.close();
    expect((await subscriberNamed("reader@example.com"))[0]).toMatchObject({ status: "active", tags: ["news"] });
    // The consent record: the form's wording and id with the signup, then the click.
    const token = (await t.call("POST", `/api/v1/subscribers/${reader!.id}/preference-token`)).body.token as string;
    const exported = (await t.call("GET", "/api/v1/preference-center/export", { key: null, headers: { authorization: `Bearer ${token}` } })).body;
    const consent = exported.consent as Array<Record<string, unknown>>;
    expect(consent.map((c) => c.action)).toEqual(["opt_in_requested", "confirmed"]);
    expect(consent[0]).toMatchObject({ source: "form", wording: { text: "Send me the shop's newsletter.", source_id: formId } });
    expect(consent[0]!.ip).toMatch(/127\.0\.0\.1/);
  });

  it("with the optional script on the site, the site's page solves it and posts once", async () => {
    const plain = snippet;
    snippet = plain.replace(/<!-- (<script [^>]*><\/script>) -->/, "$1");
    expect(snippet).toContain('<script src="');
    try {
      const { url, visited } = await fillAndSend(site.origin, "scripted@example.com");
      expect(url).toBe(`${site.origin}/thanks`);
      expect(visited.filter((path) => path.startsWith("/subscribe/"))).toEqual([]);
    } finally {
      snippet = plain;
    }
    await eventually(() => subscriberNamed("scripted@example.com"), (found) => found.length === 1);
  });

  it("the same snippet on a page of another origin is refused, and nothing is stored", async () => {
    const page = await context.newPage();
    await page.goto(`${other.origin}/`);
    await page.getByLabel("Email address").fill("elsewhere@example.com");
    await page.getByLabel("First name").fill("Eve");
    const [response] = await Promise.all([page.waitForResponse((res) => res.request().method() === "POST"), page.getByRole("button", { name: "Subscribe" }).click()]);
    expect(response.status()).toBe(403);
    await expect(page.getByRole("heading").textContent()).resolves.toBe("Signup not possible");
    await expectNoAxeViolations(page);
    await page.close();
    expect(await subscriberNamed("elsewhere@example.com")).toEqual([]);
  });

  it("without a success page of the account's, the portal says to check the inbox, accessibly", async () => {
    expect((await t.call("PATCH", `/api/v1/forms/${formId}`, { body: { success_url: "" } })).status).toBe(200);
    try {
      const { url } = await fillAndSend(site.origin, "portal-done@example.com");
      expect(new URL(url).pathname).toBe(`/subscribe/${formId}/done`);
      const page = await context.newPage();
      await page.goto(url);
      await expect(page.getByRole("heading").textContent()).resolves.toBe("Check your inbox");
      await expectNoAxeViolations(page);
      await page.close();
    } finally {
      await t.call("PATCH", `/api/v1/forms/${formId}`, { body: { success_url: `${site.origin}/thanks` } });
    }
  });
});
