import { expectFitsViewport, launchChromium, tabUntilFocused } from "@emailsvc/testing";
import type { Browser } from "playwright-core";
import { browserSignIn, createMember } from "./support/dashboard-session";
import { startTestPlatform, type TestPlatform } from "./support/platform-client";

// The range of screens for the signed-in pages: the area tests check
// 1280 px and a 360 px phone; this checks the step between, a 768 px tablet,
// where the navigation moves behind the Menu button: every page of the
// navigation fits without sideways scrolling, and the menu opens and leads
// to a page from the keyboard alone.

let t: TestPlatform;
let browser: Browser;
beforeAll(async () => {
  t = await startTestPlatform("dashboard-layout");
  browser = await launchChromium();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await t?.close();
});

it("fits a 768 px tablet on every page of the navigation, whose menu works from the keyboard", async () => {
  const admin = await createMember(t, "admin");
  const context = await browser.newContext({ viewport: { width: 768, height: 1024 }, isMobile: true, hasTouch: true });
  context.setDefaultTimeout(15_000);
  try {
    await browserSignIn(context, t, admin);
    const page = await context.newPage();
    await page.goto(`${t.url}/dashboard/`);
    await page.getByRole("heading", { level: 1 }).waitFor();
    const menu = page.getByRole("button", { name: "Menu" });
    // Behind the button at this width: the navigation's links are not shown until it opens.
    await expect(page.getByRole("navigation").getByRole("link", { name: "Subscribers" }).isVisible()).resolves.toBe(false);
    await tabUntilFocused(page, menu);
    await page.keyboard.press("Enter");
    await expect(menu.getAttribute("aria-expanded")).resolves.toBe("true");
    const links = page.getByRole("navigation").getByRole("link");
    const hrefs = await Promise.all((await links.all()).map((l) => l.getAttribute("href")));
    expect(hrefs.length).toBeGreaterThanOrEqual(14);
    await tabUntilFocused(page, page.getByRole("navigation").getByRole("link", { name: "Templates" }));
    await page.keyboard.press("Enter");
    await page.waitForURL(`${t.url}/dashboard/templates`);
    await page.getByRole("heading", { level: 1, name: "Templates" }).waitFor();
    for (const href of hrefs) {
      await page.goto(`${t.url}${href}`);
      await page.getByRole("heading", { level: 1 }).waitFor();
      await page.waitForLoadState("networkidle");
      expect({ href, title: await page.getByRole("heading", { level: 1 }).textContent() }).not.toEqual({ href, title: "Page not found" });
      await expectFitsViewport(page);
    }
  } finally {
    await context.close();
  }
}, 90_000);
