import { expectFitsViewport, expectNoAxeViolations, launchChromium, openInCrossSiteFrame, tabUntilFocused } from "@emailsvc/testing";
import { signToken } from "@emailsvc/tokens";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { startTestPlatform, type TestPlatform } from "./support/platform-client";

// The unsubscribe link's pages in headless Chromium, as a person who clicks
// the link of a marketing mail on a phone sees them: accessible (axe-core,
// WCAG 2.1 A and AA), no wider than a 360 px screen, and usable with the
// keyboard alone. Loading the page (what a mail scanner does) unsubscribes
// no one; pressing its button does. embedded/test/unsubscribe.test.ts covers
// the same routes over plain HTTP.

let t: TestPlatform;
let browser: Browser;
let phone: BrowserContext;
beforeAll(async () => {
  t = await startTestPlatform("unsubscribe-browser");
  browser = await launchChromium();
  phone = await browser.newContext({ viewport: { width: 360, height: 740 }, isMobile: true, hasTouch: true });
});
afterAll(async () => {
  await browser?.close();
  await t?.close();
});

async function subscriber(email: string): Promise<string> {
  const res = await t.call("POST", "/api/v1/subscribers", { body: { email } });
  expect(res.status).toBe(201);
  return res.body.id as string;
}

/** The link of a marketing mail's List-Unsubscribe header, as delivery signs it. */
function linkFor(subscriberId: string): string {
  const token = signToken(t.platform.tokenKeys, { purpose: "unsubscribe", accountId: t.accountId, mode: "test", subscriberId }, { ttlSeconds: 3600 });
  return `${t.url}/unsubscribe?token=${token}`;
}

const statusOf = async (id: string) => (await t.call("GET", `/api/v1/subscribers/${id}`)).body.status as string;

/** Opens `url` in a new page of `context`; checks the answer's status. */
async function open(context: BrowserContext, url: string, status = 200): Promise<Page> {
  const page = await context.newPage();
  const res = await page.goto(url);
  expect(res?.status()).toBe(status);
  return page;
}

describe("unsubscribe pages in Chromium", () => {
  it("the confirmation page is accessible, fits a phone, and loading it unsubscribes no one", async () => {
    const id = await subscriber("phone@example.com");
    const page = await open(phone, linkFor(id));
    await expect(page.title()).resolves.toBe("Unsubscribe");
    await expectNoAxeViolations(page);
    await expectFitsViewport(page);
    // What a scanner's GET leaves: the page, and the subscriber as it was.
    await page.waitForLoadState("networkidle");
    expect(await statusOf(id)).toBe("active");
    await page.close();
  });

  it("is accessible on a desktop too", async () => {
    const id = await subscriber("desktop@example.com");
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await open(context, linkFor(id));
    await expectNoAxeViolations(page);
    await context.close();
    expect(await statusOf(id)).toBe("active");
  });

  it("unsubscribes with the keyboard alone: Tab to the button, Enter", async () => {
    const id = await subscriber("keyboard@example.com");
    const page = await open(phone, linkFor(id));
    await tabUntilFocused(page, page.getByRole("button", { name: "Unsubscribe" }));
    expect(await statusOf(id)).toBe("active");
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { name: "You are unsubscribed" }).waitFor();
    expect(await statusOf(id)).toBe("unsubscribed");
    // The page it ends on passes the same checks.
    await expect(page.title()).resolves.toBe("Unsubscribed");
    await expectNoAxeViolations(page);
    await expectFitsViewport(page);
    await page.close();
  });

  it("the page of a link that is not valid is accessible and fits a phone", async () => {
    const id = await subscriber("invalid@example.com");
    const page = await open(phone, linkFor(id).replace(/token=[^.]+\./, "token=e30."), 403);
    await page.getByRole("heading", { name: "This link is not valid" }).waitFor();
    await expectNoAxeViolations(page);
    await expectFitsViewport(page);
    await page.close();
    expect(await statusOf(id)).toBe("active");
  });

  it("a link cut short in the mail client is a page, not JSON, in the browser's language (issue 16, defect 13)", async () => {
    const german = await browser.newContext({ viewport: { width: 360, height: 740 }, locale: "de-DE" });
    const cut = linkFor(await subscriber("cut@example.com")).replace(/\.[^.]*$/, "");
    for (const url of [cut, `${t.url}/unsubscribe`]) {
      const page = await open(german, url, 400);
      await page.getByRole("heading", { name: "Dieser Link ist ungültig" }).waitFor();
      expect(await page.getAttribute("html", "lang")).toBe("de");
      expect(await page.content()).not.toContain("validation_failed");
      await expectNoAxeViolations(page);
      await expectFitsViewport(page);
      await page.close();
    }
    await german.close();
  });

  it("speaks the subscriber's language: a German subscriber unsubscribes in German, with the keyboard", async () => {
    const id = (await t.call("POST", "/api/v1/subscribers", { body: { email: "deutsch@example.com", locale: "de" } })).body.id as string;
    const page = await open(phone, linkFor(id));
    await page.getByRole("heading", { name: "Von unsubscribe-browser abmelden?" }).waitFor();
    await expectNoAxeViolations(page);
    await tabUntilFocused(page, page.getByRole("button", { name: "Alle Marketing-E-Mails abbestellen" }));
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { name: "Sie sind abgemeldet" }).waitFor();
    expect(await statusOf(id)).toBe("unsubscribed");
    await expectNoAxeViolations(page);
    await page.close();
  });

  it("refuses to be framed by another site (frame-ancestors 'none'), so no page can dress its button up", async () => {
    const id = await subscriber("framed@example.com");
    const page = await phone.newPage();
    await expect(openInCrossSiteFrame(page, linkFor(id))).rejects.toThrow(/refused to be framed/);
    await page.close();
    expect(await statusOf(id)).toBe("active");
  });
});
