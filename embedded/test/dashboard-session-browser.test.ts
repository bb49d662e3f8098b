import { launchChromium } from "@emailsvc/testing";
import type { Browser } from "playwright-core";
import { browserSignIn, createMember } from "./support/dashboard-session";
import { startTestPlatform, type TestPlatform } from "./support/platform-client";

// The support the dashboard's browser tests sign in with: a member made
// through the invitation, the session cookie put into a Chromium context, and
// the browser then known to the API as that member (HttpOnly: no script of
// the page reads the cookie).

let browser: Browser;
let t: TestPlatform;
beforeAll(async () => {
  [browser, t] = await Promise.all([launchChromium(), startTestPlatform("dashboard-session-browser")]);
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await t?.close();
});

it("puts a member's session into a browser context, where the API answers as that member", async () => {
  const creds = await createMember(t, "developer");
  const context = await browser.newContext();
  const session = await browserSignIn(context, t, creds);
  const page = await context.newPage();
  const opened = await page.goto(`${t.url}/api/v1/session`);
  expect(opened?.status()).toBe(200);
  expect(JSON.parse(await page.locator("body").innerText())).toMatchObject({ member: { id: creds.memberId, email: creds.email, role: "developer" }, csrf_token: session.csrf });
  // HttpOnly: the page's scripts do not see it.
  expect(await page.evaluate("document.cookie")).toBe("");
  // A change from the page needs the CSRF token as well as the cookie.
  const refused = await page.evaluate(async () => (await fetch("/api/v1/session", { method: "DELETE" })).status);
  expect(refused).toBe(403);
  const out = await page.evaluate(async (csrf) => (await fetch("/api/v1/session", { method: "DELETE", headers: { "X-CSRF-Token": csrf } })).status, session.csrf);
  expect(out).toBe(204);
  expect((await context.cookies()).filter((c) => c.name === "emailsvc_session")).toEqual([]);
  await context.close();
});
