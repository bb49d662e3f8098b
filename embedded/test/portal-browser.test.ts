import { readFileSync } from "node:fs";
import { expectFitsViewport, expectNoAxeViolations, launchChromium, launchChromiumProfile, openInCrossSiteFrame, tabUntilFocused } from "@emailsvc/testing";
import { signToken } from "@emailsvc/tokens";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { eventually, startTestPlatform, type TestPlatform } from "./support/platform-client";

// The preference page in headless Chromium, as a subscriber who follows the
// link in a mail sees it: on a phone, with the keyboard only, in German, and
// inside the customer's own site (a cross-site iframe with third-party
// cookies blocked). Every page passes axe-core (WCAG 2.1 A and AA).
// embedded/test/portal-page.test.ts covers the same routes over plain HTTP.

let t: TestPlatform;
let browser: Browser;
let phone: BrowserContext;
beforeAll(async () => {
  t = await startTestPlatform("portal-browser");
  browser = await launchChromium();
  phone = await browser.newContext({ viewport: { width: 360, height: 740 }, isMobile: true, hasTouch: true, acceptDownloads: true });
});
afterAll(async () => {
  await browser?.close();
  await t?.close();
});

let news: string;
beforeAll(async () => {
  news = (await t.call("POST", "/api/v1/tags", { body: { name: "News", is_public: true, description: "What is new, weekly" } })).body.id;
  await t.call("POST", "/api/v1/tags", { body: { name: "Offers", is_public: true } });
  await t.call("POST", "/api/v1/tags", { body: { name: "segment-a", is_public: false } });
});

async function subscriber(email: string, tags: string[] = []): Promise<string> {
  const res = await t.call("POST", "/api/v1/subscribers", { body: { email, tags } });
  expect(res.status).toBe(201);
  return res.body.id as string;
}

/** The subscriber's link, on the page this platform serves. */
async function linkFor(id: string): Promise<string> {
  const url = (await t.call("POST", `/api/v1/subscribers/${id}/preference-token`)).body.url as string;
  return url.replace("localhost", "127.0.0.1");
}

const subscriberNow = async (id: string) => (await t.call("GET", `/api/v1/subscribers/${id}`)).body as { status: string; tags: string[] };

async function open(context: BrowserContext, url: string, status = 200): Promise<Page> {
  const page = await context.newPage();
  const res = await page.goto(url);
  expect(res?.status()).toBe(status);
  return page;
}

describe("the preference page in Chromium", () => {
  it("shows the subscriber's lists on a phone, accessibly, and the link's token leaves the address bar", async () => {
    const id = await subscriber("phone-reader@example.com", ["News", "segment-a"]);
    const link = await linkFor(id);
    const page = await open(phone, link);
    await expect(page.title()).resolves.toBe("Your email preferences");
    expect(page.url()).toMatch(/\/preferences\/s\//);
    expect(page.url()).not.toContain(new URL(link).searchParams.get("token")!);
    await expect(page.getByText("Subscribed", { exact: true }).count()).resolves.toBe(1);
    await expect(page.getByText("segment-a").count()).resolves.toBe(0);
    await expectNoAxeViolations(page);
    await expectFitsViewport(page);
    await page.close();
  });

  it("joins, leaves and leaves everything by clicking", async () => {
    const id = await subscriber("clicker@example.com", ["News"]);
    const page = await open(phone, await linkFor(id));
    await page.getByRole("button", { name: "Subscribe to Offers" }).click();
    await expect(page.getByRole("status").textContent()).resolves.toBe("You subscribed to Offers.");
    expect((await subscriberNow(id)).tags).toEqual(["News", "Offers"]);
    await page.getByRole("button", { name: "Unsubscribe from News" }).click();
    await expect(page.getByRole("status").textContent()).resolves.toBe("You unsubscribed from News.");
    expect((await subscriberNow(id)).tags).toEqual(["Offers"]);
    await expectNoAxeViolations(page);
    await page.getByRole("button", { name: "Unsubscribe from everything" }).click();
    await expect(page.getByRole("status").textContent()).resolves.toBe("You are unsubscribed from all marketing email.");
    expect((await subscriberNow(id)).status).toBe("unsubscribed");
    // Nothing shows as subscribed any more (issue 16, defect 13): Offers was left with everything else.
    await expect(page.getByText("Subscribed", { exact: true }).count()).resolves.toBe(0);
    await expect(page.getByText("Not subscribed", { exact: true }).count()).resolves.toBe(2);
    await expect(page.getByRole("button", { name: "Subscribe to Offers" }).count()).resolves.toBe(1);
    await expectNoAxeViolations(page);
    await expectFitsViewport(page);
    await page.close();
  });

  it("names the sender and shows lists in German where the sender translated them (issue 16, defect 13)", async () => {
    await t.call("PATCH", "/api/v1/portal-settings", { body: { sender_name: "Acme" } });
    await t.call("POST", "/api/v1/tags", { body: { name: "Tips", is_public: true, description: "Tips and tricks", translations: { de: { name: "Tipps", description: "Tipps und Tricks" } } } });
    const id = await subscriber("tips-reader@example.com", ["Tips"]);
    const german = await browser.newContext({ viewport: { width: 360, height: 740 }, locale: "de-DE" });
    const page = await open(german, await linkFor(id));
    await page.getByRole("heading", { level: 1, name: "Ihre Abonnements bei Acme" }).waitFor();
    await expect(page.title()).resolves.toBe("Ihre Abonnements bei Acme");
    await expect(page.getByText("Tipps und Tricks", { exact: true }).count()).resolves.toBe(1);
    await expect(page.getByText("Tips", { exact: true }).count()).resolves.toBe(0);
    await page.getByRole("button", { name: "Tipps abbestellen" }).click();
    await expect(page.getByRole("status").textContent()).resolves.toBe("Sie haben Tipps abbestellt.");
    await expectNoAxeViolations(page);
    await expectFitsViewport(page);
    await german.close();
    await t.call("PATCH", "/api/v1/portal-settings", { body: { sender_name: null } });
  });

  it("downloads the subscriber's data and saves their language", async () => {
    const id = await subscriber("download@example.com", ["News"]);
    const page = await open(phone, await linkFor(id));
    const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Download my data" }).click()]);
    expect(download.suggestedFilename()).toBe("my-data.json");
    const data = JSON.parse(readFileSync((await download.path())!, "utf8"));
    expect(data.profile.email).toBe("download@example.com");
    await page.getByRole("combobox", { name: "Your language" }).selectOption("de");
    await page.getByRole("button", { name: "Save language" }).click();
    await expect(page.getByRole("status").textContent()).resolves.toBe("Ihre Sprache ist gespeichert.");
    expect((await t.call("GET", `/api/v1/subscribers/${id}`)).body.locale).toBe("de");
    await expectNoAxeViolations(page);
    await page.close();
  });

  it("works with the keyboard alone", async () => {
    const id = await subscriber("keyboard@example.com");
    const page = await open(phone, await linkFor(id));
    await tabUntilFocused(page, page.getByRole("button", { name: "Subscribe to News" }));
    await page.keyboard.press("Enter");
    await expect(page.getByRole("status").textContent()).resolves.toBe("You subscribed to News.");
    expect((await subscriberNow(id)).tags).toEqual(["News"]);
    await page.close();
  });

  it("deletes the account after a confirmation step, accessible throughout", async () => {
    const id = await subscriber("leaving@example.com", ["News"]);
    const page = await open(phone, await linkFor(id));
    await page.getByRole("link", { name: "Delete my account" }).click();
    await expect(page.title()).resolves.toBe("Delete your account?");
    await expectNoAxeViolations(page);
    // Going back changes nothing.
    await page.getByRole("link", { name: "No, go back" }).click();
    await expect(page.title()).resolves.toBe("Your email preferences");
    expect((await subscriberNow(id)).tags).toEqual(["News"]);
    await page.getByRole("link", { name: "Delete my account" }).click();
    await page.getByRole("button", { name: "Yes, delete everything" }).click();
    await expect(page.title()).resolves.toBe("Your account has been deleted");
    await expectNoAxeViolations(page);
    await eventually(
      async () => (await t.call("GET", `/api/v1/subscribers/${id}`)).status,
      (status) => status === 404,
    );
    await page.close();
  });

  it("explains an expired link", async () => {
    const id = await subscriber("late@example.com");
    const expired = signToken(t.platform.tokenKeys, { purpose: "preferences", accountId: t.accountId, mode: "test", subscriberId: id }, { ttlSeconds: 60, now: Date.now() - 3_600_000 });
    const page = await open(phone, `${t.platform.portalUrl}/preferences?token=${expired}`, 403);
    await expect(page.title()).resolves.toBe("This link does not work");
    await expect(page.getByText("The link has expired.").count()).resolves.toBe(1);
    await expectNoAxeViolations(page);
    await expectFitsViewport(page);
    await page.close();
  });

  it("sends a new link from an expired link's page, by the address alone", async () => {
    const template = await t.call("POST", "/api/v1/templates", {
      body: {
        name: "Preference link",
        slug: "preference-link",
        subject: "Your link",
        category: "transactional",
        mjml_content: '<mjml><mj-body><mj-section><mj-column><mj-text><a href="{{preference_center_url}}">Manage your email</a></mj-text></mj-column></mj-section></mj-body></mjml>',
      },
    });
    expect(template.status).toBe(201);
    const id = await subscriber("lost-mail@example.com");
    const expired = signToken(t.platform.tokenKeys, { purpose: "preferences", accountId: t.accountId, mode: "test", subscriberId: id }, { ttlSeconds: 60, now: Date.now() - 3_600_000 });
    const page = await open(phone, `${t.platform.portalUrl}/preferences?token=${expired}`, 403);
    await page.getByLabel("Email address").fill("lost-mail@example.com");
    await page.getByRole("button", { name: "Send me a new link" }).click();
    await expect(page.title()).resolves.toBe("Check your inbox");
    await expectNoAxeViolations(page);
    await expectFitsViewport(page);
    const sent = await eventually(
      async () => ((await t.call("GET", "/api/v1/emails?limit=500")).body.items as Array<{ to: string; template_id: string }>).filter((e) => e.to === "lost-mail@example.com"),
      (found) => found.length === 1,
    );
    expect(sent[0]!.template_id).toBe(template.body.id);
    await page.close();
  });

  it("speaks German to a German browser, and switches language on request", async () => {
    const german = await browser.newContext({ locale: "de-CH", viewport: { width: 360, height: 740 }, isMobile: true });
    try {
      const id = await subscriber("leser@example.com");
      const page = await open(german, await linkFor(id));
      await expect(page.title()).resolves.toBe("Ihre E-Mail-Einstellungen");
      await expect(page.locator("html").getAttribute("lang")).resolves.toBe("de");
      await page.getByRole("button", { name: "News abonnieren" }).click();
      await expect(page.getByRole("status").textContent()).resolves.toBe("Sie haben News abonniert.");
      await expectNoAxeViolations(page);
      await page.getByRole("link", { name: "Français" }).click();
      await expect(page.title()).resolves.toBe("Vos préférences e-mail");
      await expectNoAxeViolations(page);
      await page.close();
    } finally {
      await german.close();
    }
  });
});

describe("the preference page inside the customer's site", () => {
  let profile: BrowserContext;
  beforeAll(async () => {
    profile = await launchChromiumProfile({ thirdPartyCookies: "blocked", viewport: { width: 800, height: 900 } });
  });
  afterAll(() => profile?.close());

  it("works in a cross-site iframe with third-party cookies blocked", async () => {
    const id = await subscriber("embedded@example.com");
    const page = await profile.newPage();
    // The customer's site (another host) embeds the link the mail carried.
    const embedded = await openInCrossSiteFrame(page, await linkFor(id), { title: "Email preferences" });
    try {
      const { frame } = embedded;
      await frame.getByRole("button", { name: "Subscribe to News" }).click();
      await frame.waitForLoadState("load");
      await expect(frame.getByRole("status").textContent()).resolves.toBe("You subscribed to News.");
      expect((await subscriberNow(id)).tags).toEqual(["News"]);
      // The page keeps no cookie at all: nothing to block.
      expect(await profile.cookies()).toEqual([]);
      await expectNoAxeViolations(frame);
    } finally {
      await embedded.close();
      await page.close();
    }
  });
});
