import { expectFitsViewport, expectNoAxeViolations, launchChromium, tabUntilFocused, startTestDnsServer, type TestDnsServer } from "@emailsvc/testing";
import type { Browser, BrowserContext, Locator, Page } from "playwright-core";
import { GENEROUS_RATE_LIMIT_ENV } from "../../services/gateway/test/support/harness";
import { Receiver } from "../../services/webhooks/test/receiver";
import { browserSignIn, createMember, sessionCall, signIn, type DashboardSession, type MemberCredentials } from "./support/dashboard-session";
import { eventually, startTestPlatform, type TestPlatform } from "./support/platform-client";

// The dashboard's deliverability pages in headless Chromium, clicked through
// as a new customer would: add a sending domain, copy its DNS records,
// publish some in a real DNS server the platform asks, verify and see each
// record's state, delete it; suppress and unsuppress an address; create a
// webhook endpoint (its secret shown once), see a delivery in its log after
// an event reached a real HTTP receiver, and replay it. Every page and state
// passes axe-core (WCAG 2.1 AA); the lists fit a 360 px phone; one action of
// each page is done with the keyboard; a viewer (and, for suppressions, a
// developer) has no write controls and the API refuses them.

const SPF_INCLUDE = "_spf.platform-mail.example";
const RETURN_PATH_HOST = "bounces.platform-mail.example";

let t: TestPlatform;
let dns: TestDnsServer;
let receiver: Receiver;
let browser: Browser;
let admin: MemberCredentials;
let adminSession: DashboardSession;
beforeAll(async () => {
  dns = await startTestDnsServer();
  receiver = await Receiver.start();
  t = await startTestPlatform("dashboard-deliverability", {
    ...GENEROUS_RATE_LIMIT_ENV,
    SENDER_DOMAIN_DNS_SERVERS: dns.address,
    SPF_INCLUDE,
    RETURN_PATH_HOST,
    // The receiver is on this machine: the operator's allowance, as a development setup would set it.
    WEBHOOK_ALLOW_HTTP: "true",
    WEBHOOK_ALLOW_PRIVATE_RANGES: "127.0.0.0/8",
    WEBHOOK_RETRY_DELAYS_SECONDS: "1",
  });
  browser = await launchChromium();
  admin = await createMember(t, "admin");
  adminSession = await signIn(t, admin);
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await t?.close();
  await receiver?.close();
  await dns?.close();
});

/** A desktop browser signed in as `creds` (clipboard allowed: the copy buttons are checked by what they copied). */
async function signedIn(creds: MemberCredentials, options: Parameters<Browser["newContext"]>[0] = {}): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, permissions: ["clipboard-read", "clipboard-write"], ...options });
  // A step that hangs fails on its own, naming what it waited for, well inside the test's time.
  context.setDefaultTimeout(15_000);
  await browserSignIn(context, t, creds);
  return { context, page: await context.newPage() };
}

const open = async (page: Page, path: string) => {
  await page.goto(`${t.url}/dashboard${path}`);
  await page.getByRole("heading", { level: 1 }).waitFor();
};
const clipboard = (page: Page) => page.evaluate("navigator.clipboard.readText()") as Promise<string>;
/** Waits for the element to be on screen (Playwright's wait, which fails naming the locator). */
const shown = (locator: Locator) => locator.waitFor({ state: "visible" });
async function disabled(locator: Locator): Promise<void> {
  await shown(locator);
  expect(await locator.isDisabled()).toBe(true);
}
/** Waits until `locator` matches `n` elements (0: none, once the page shows what it loaded). */
async function countSoon(locator: Locator, n: number): Promise<void> {
  expect(await eventually(() => locator.count(), (count) => count === n)).toBe(n);
}

describe("sending domains", () => {
  it("adds a domain, shows its records with copy buttons and each record's state, verifies it now, and deletes it", async () => {
    const domain = "news.acme-dashboard.example.com";
    const { context, page } = await signedIn(await createMember(t, "developer"));
    try {
      await open(page, "/sending-domains");
      await shown(page.getByText("No sending domain yet."));
      await expectNoAxeViolations(page);

      await page.getByRole("textbox", { name: "Domain" }).fill(domain);
      await page.getByRole("button", { name: "Add the domain" }).click();
      await page.getByRole("heading", { level: 1, name: domain }).waitFor();
      expect(page.url()).toMatch(/\/dashboard\/sending-domains\/sdm_/);
      const id = page.url().split("/").pop()!;
      const created = (await sessionCall(t, adminSession, "GET", `/api/v1/domains/${id}`)).body as { status: string; records: Array<{ purpose: string; name: string; value: string; type: string }> };
      expect(created.status).toBe("pending");
      const dkim = created.records.find((r) => r.purpose === "dkim")!;
      const spf = created.records.find((r) => r.purpose === "spf")!;
      const records = page.getByRole("region", { name: "DNS records", exact: true });
      // Every record, each with its own state (none checked yet) and its name and value to copy.
      for (const purpose of ["DKIM (RSA)", "DKIM (Ed25519)", "SPF", "DMARC", "Return path"]) {
        const row = records.getByRole("row", { name: new RegExp(`^${purpose.replace(/[()]/g, "\\$&")}`) });
        await shown(row.getByText("Not checked"));
        await shown(row.getByRole("button", { name: `Copy: name of the ${purpose} record` }));
        await shown(row.getByRole("button", { name: `Copy: value of the ${purpose} record` }));
      }
      await expectNoAxeViolations(page);

      // The copy buttons copy what the API says to publish.
      await records.getByRole("button", { name: "Copy: value of the DKIM (RSA) record" }).click();
      expect(await clipboard(page)).toBe(dkim.value);
      await records.getByRole("button", { name: "Copy: name of the SPF record" }).click();
      expect(await clipboard(page)).toBe(spf.name);

      // The customer publishes the DKIM key only, and verifies with the keyboard: DKIM seen, SPF missing, still pending.
      dns.txts.set(dkim.name.toLowerCase(), [dkim.value]);
      const verify = page.getByRole("button", { name: "Verify now" });
      await tabUntilFocused(page, verify, 60);
      await page.keyboard.press("Enter");
      const dkimRow = records.getByRole("row", { name: /^DKIM \(RSA\)/ });
      const spfRow = records.getByRole("row", { name: /^SPF/ });
      await shown(dkimRow.getByText("Verified"));
      await shown(spfRow.getByText("Missing"));
      await shown(page.getByText("Pending", { exact: true }));
      await expectNoAxeViolations(page);

      // A wrong SPF record is shown as found; the right one verifies the domain.
      dns.txts.set(domain, ["v=spf1 -all"]);
      await verify.click();
      await shown(spfRow.getByText("Different value"));
      await shown(spfRow.getByText("v=spf1 -all"));
      dns.txts.set(domain, [spf.value]);
      await verify.click();
      await shown(spfRow.getByText("Verified"));
      await shown(page.getByRole("region", { name: "Verification" }).getByText("Verified", { exact: true }).first());
      expect((await sessionCall(t, adminSession, "GET", `/api/v1/domains/${id}`)).body.status).toBe("verified");
      await expectNoAxeViolations(page);

      // The list shows it verified.
      await page.getByRole("link", { name: "All sending domains" }).click();
      await shown(page.getByRole("row", { name: new RegExp(domain) }).getByText("Verified"));

      // Deleting asks for the name, typed.
      await page.getByRole("link", { name: domain }).click();
      await page.getByRole("button", { name: "Delete the domain" }).click();
      const dialog = page.getByRole("dialog", { name: `Delete ${domain}?` });
      await disabled(dialog.getByRole("button", { name: "Delete the domain" }));
      await expectNoAxeViolations(page);
      await dialog.getByLabel(`Type ${domain} to confirm`).fill(domain);
      await dialog.getByRole("button", { name: "Delete the domain" }).click();
      await page.getByRole("heading", { level: 1, name: "Sending domains" }).waitFor();
      await shown(page.getByText("No sending domain yet."));
      expect((await sessionCall(t, adminSession, "GET", `/api/v1/domains/${id}`)).status).toBe(404);

      // An address of no domain: the error state, with a retry.
      await open(page, `/sending-domains/${id}`);
      await shown(page.getByRole("alert").getByText("Not found."));
      await shown(page.getByRole("button", { name: "Try again" }));
      await expectNoAxeViolations(page);
    } finally {
      await context.close();
    }
  }, 90_000);
});

describe("suppressions", () => {
  it("lists, adds by hand, searches by address, and removes with a reason; in German too", async () => {
    const { context, page } = await signedIn(admin);
    try {
      await open(page, "/suppressions");
      await shown(page.getByText("The suppression list is empty."));
      await expectNoAxeViolations(page);

      // Added with the keyboard only.
      const add = page.getByRole("region", { name: "Suppress an address" });
      const field = add.getByLabel("Email address");
      await tabUntilFocused(page, field, 60);
      await page.keyboard.type("Left.Company@Example.com");
      await page.keyboard.press("Enter");
      await shown(page.getByText("Left.Company@Example.com is suppressed."));
      const list = page.getByRole("region", { name: "Suppressions" });
      const row = list.getByRole("row", { name: /Left\.Company@Example\.com/ });
      await shown(row.getByText("Manual"));
      await shown(row.getByText("By hand"));
      // Again: the entry stays as it was.
      await field.fill("left.company@example.com");
      await add.getByRole("button", { name: "Suppress" }).click();
      await shown(page.getByText("left.company@example.com was on the list already; its entry is unchanged."));
      await field.fill("other@example.com");
      await add.getByRole("button", { name: "Suppress" }).click();
      await shown(list.getByRole("row", { name: /other@example\.com/ }));
      await expectNoAxeViolations(page);

      // Search by address (any case): that entry only, and the search is in the address.
      const search = page.getByRole("search", { name: "Search the list" });
      await search.getByLabel("Email address").fill("LEFT.company@example.com");
      await search.getByRole("button", { name: "Search" }).click();
      await countSoon(list.getByRole("row"), 2);
      await shown(list.getByRole("row", { name: /Left\.Company@Example\.com/ }));
      expect(new URL(page.url()).searchParams.get("email")).toBe("LEFT.company@example.com");
      await search.getByLabel("Email address").fill("nobody@example.com");
      await search.getByRole("button", { name: "Search" }).click();
      await shown(page.getByText("No entry matches."));
      await expectNoAxeViolations(page);
      await page.getByRole("button", { name: "Show the whole list" }).click();
      await countSoon(list.getByRole("row"), 3);

      // Removal asks why (the API keeps it) before the button works.
      await list.getByRole("button", { name: "Remove Left.Company@Example.com" }).click();
      const dialog = page.getByRole("dialog", { name: "Remove Left.Company@Example.com from the list?" });
      await disabled(dialog.getByRole("button", { name: "Remove" }));
      await expectNoAxeViolations(page);
      await dialog.getByLabel("Why may it be mailed again?").fill("Asked us to write again");
      await dialog.getByRole("button", { name: "Remove" }).click();
      await shown(page.getByText("Left.Company@Example.com removed from the list."));
      await countSoon(list.getByRole("row"), 2);
      const left = (await sessionCall(t, adminSession, "GET", "/api/v1/suppressions?limit=100")).body.items as Array<{ email: string }>;
      expect(left.map((s) => s.email)).toEqual(["other@example.com"]);

      // In German.
      await page.getByLabel("Language").selectOption("de");
      await page.getByRole("heading", { level: 1, name: "Sperrliste" }).waitFor();
      await shown(page.getByRole("columnheader", { name: "Grund" }));
      await shown(page.getByRole("region", { name: "Sperrliste" }).getByText("Manuell").first());
      await expectNoAxeViolations(page);
      await page.getByLabel("Sprache").selectOption("en");
    } finally {
      await context.close();
    }
  }, 90_000);
});

describe("webhooks", () => {
  it("creates an endpoint (its secret shown once), shows a delivery after an event, replays it, edits, turns off, rotates and deletes", async () => {
    const { context, page } = await signedIn(await createMember(t, "developer"));
    const url = `http://127.0.0.1:${receiver.port}/dashboard-hook`;
    try {
      await open(page, "/webhooks");
      await shown(page.getByText("No endpoint yet."));
      await expectNoAxeViolations(page);

      const form = page.getByRole("region", { name: "Create an endpoint" });
      await form.getByLabel("Endpoint URL").fill(url);
      await form.getByLabel("Description (optional)").fill("CRM sync");
      // One event type instead of all.
      await form.getByLabel("All events (also types added later)").uncheck();
      await form.getByLabel("subscriber.created").check();
      await form.getByRole("button", { name: "Create the endpoint" }).click();
      const secretBox = page.getByRole("status").filter({ hasText: "Copy the secret now." });
      await shown(secretBox);
      const secret = (await secretBox.locator("code").textContent())!;
      expect(secret).toMatch(/^whsec_/);
      await secretBox.getByRole("button", { name: "Copy: signing secret" }).click();
      expect(await clipboard(page)).toBe(secret);
      const table = page.getByRole("region", { name: "Webhooks" });
      await shown(table.getByRole("row", { name: new RegExp(url.replace(/[.]/g, "\\.")) }).getByText("subscriber.created"));
      await expectNoAxeViolations(page);
      // Once: dismissed, or on the next visit, it is nowhere in the page.
      await secretBox.getByRole("button", { name: "I have stored it" }).click();
      await countSoon(page.getByText(secret), 0);
      await open(page, "/webhooks");
      expect(await page.content()).not.toContain(secret.slice(6));

      // Its page: no delivery yet.
      await page.getByRole("link", { name: url }).click();
      await page.getByRole("heading", { level: 1, name: "Webhook endpoint" }).waitFor();
      await shown(page.getByText("Nothing sent to this endpoint yet."));
      await expectNoAxeViolations(page);

      // An event of its type (a subscriber created in the live mode the page shows) reaches the receiver and its log.
      const created = await sessionCall(t, adminSession, "POST", "/api/v1/subscribers", { body: { email: "hooked@example.com" } });
      expect(created.status).toBe(201);
      const [first] = await eventually(async () => receiver.to("/dashboard-hook"), (r) => r.length >= 1);
      const messageId = first!.headers["webhook-id"]!;
      const deliveries = page.getByRole("region", { name: "Deliveries", exact: true });
      const row = deliveries.getByRole("row", { name: new RegExp(messageId) });
      await eventually(
        async () => {
          await page.getByRole("button", { name: "Refresh" }).click();
          return row.getByText("Delivered").isVisible();
        },
        (seen) => seen,
        100,
      );
      await shown(row.getByText("subscriber.created"));
      await shown(row.getByRole("cell", { name: "200" }));
      await shown(row.getByRole("cell", { name: "1", exact: true }));
      await expectNoAxeViolations(page);

      // Replay with the keyboard: the same message again, with the same webhook-id.
      const replay = row.getByRole("button", { name: `Send again: subscriber.created ${messageId}` });
      await tabUntilFocused(page, replay, 80);
      await page.keyboard.press("Enter");
      await shown(page.getByText(`${messageId} is sent again now.`));
      const both = await eventually(async () => receiver.to("/dashboard-hook"), (r) => r.length >= 2);
      expect(both.map((r) => r.headers["webhook-id"])).toEqual([messageId, messageId]);
      expect(both[1]!.body).toBe(first!.body);
      // The log follows the replayed delivery by itself (no Refresh): its second attempt, delivered.
      await shown(row.getByRole("cell", { name: "2", exact: true }));
      await shown(row.getByText("Delivered"));

      // Edit: every event type, a new description.
      const edit = page.getByRole("region", { name: "Change the endpoint" });
      await edit.getByLabel("Description (optional)").fill("CRM sync, all events");
      await edit.getByLabel("All events (also types added later)").check();
      await edit.getByRole("button", { name: "Save" }).click();
      await shown(page.getByText("Endpoint saved."));
      const id = page.url().split("/").pop()!;
      expect((await sessionCall(t, adminSession, "GET", `/api/v1/webhooks/${id}`)).body).toMatchObject({ description: "CRM sync, all events", events: ["*"], is_active: true });

      // Off and on.
      await page.getByRole("button", { name: "Turn off" }).click();
      await shown(page.getByText("Endpoint turned off."));
      expect((await sessionCall(t, adminSession, "GET", `/api/v1/webhooks/${id}`)).body.is_active).toBe(false);
      await page.getByRole("button", { name: "Turn on" }).click();
      await shown(page.getByText("Endpoint turned on."));

      // Rotation: a new secret, shown once, and the old one signing beside it for a while.
      await page.getByRole("button", { name: "Rotate the secret" }).click();
      await page.getByRole("dialog", { name: "Rotate the secret" }).getByRole("button", { name: "Rotate the secret" }).click();
      const rotated = page.getByRole("status").filter({ hasText: "Copy the secret now." });
      await shown(rotated);
      const fresh = (await rotated.locator("code").textContent())!;
      expect(fresh).toMatch(/^whsec_/);
      expect(fresh).not.toBe(secret);
      await shown(page.getByText(/Still signs beside the new one until/));
      await expectNoAxeViolations(page);

      // Deleted: back to the empty list.
      await page.getByRole("button", { name: "Delete the endpoint" }).click();
      await page.getByRole("dialog", { name: "Delete the endpoint" }).getByRole("button", { name: "Delete the endpoint" }).click();
      await page.getByRole("heading", { level: 1, name: "Webhooks" }).waitFor();
      await shown(page.getByText("No endpoint yet."));
      expect((await sessionCall(t, adminSession, "GET", `/api/v1/webhooks/${id}`)).status).toBe(404);

      // An endpoint that is not there: the error state.
      await open(page, `/webhooks/${id}`);
      await shown(page.getByRole("alert").getByText("Not found."));
      await expectNoAxeViolations(page);
    } finally {
      await context.close();
    }
  }, 120_000);
});

describe("on a phone, and for roles that may not change them", () => {
  beforeAll(async () => {
    // Something in each list, for the phone and the viewer to look at.
    const webhook = await sessionCall(t, adminSession, "POST", "/api/v1/webhooks", { body: { url: `http://127.0.0.1:${receiver.port}/phone`, events: ["subscriber.created"] } });
    expect(webhook.status).toBe(201);
    expect((await sessionCall(t, adminSession, "POST", "/api/v1/subscribers", { body: { email: "phone-reader@example.com" } })).status).toBe(201);
    await eventually(async () => receiver.to("/phone"), (r) => r.length >= 1);
    expect((await sessionCall(t, adminSession, "POST", "/api/v1/domains", { body: { name: "phone.acme-dashboard.example.com" } })).status).toBe(201);
    expect((await sessionCall(t, adminSession, "POST", "/api/v1/suppressions", { body: { email: "a-rather-long-address.for-a-phone@subdomain.example.com", reason: "manual" } })).status).toBe(201);
  });

  it("every page fits a 360 px phone and passes axe there", async () => {
    const { context, page } = await signedIn(admin, { viewport: { width: 360, height: 740 }, isMobile: true, hasTouch: true });
    try {
      const domainId = ((await sessionCall(t, adminSession, "GET", "/api/v1/domains?limit=100")).body.items as Array<{ id: string }>)[0]!.id;
      const webhookId = ((await sessionCall(t, adminSession, "GET", "/api/v1/webhooks?limit=100")).body.items as Array<{ id: string }>)[0]!.id;
      for (const [path, ready] of [
        ["/sending-domains", "phone.acme-dashboard.example.com"],
        [`/sending-domains/${domainId}`, "DNS records to publish"],
        ["/suppressions", "a-rather-long-address.for-a-phone@subdomain.example.com"],
        ["/webhooks", `http://127.0.0.1:${receiver.port}/phone`],
        [`/webhooks/${webhookId}`, "Delivery log"],
      ] as const) {
        await open(page, path);
        await shown(page.getByText(ready, { exact: true }).first());
        await expectFitsViewport(page);
        await expectNoAxeViolations(page);
      }
    } finally {
      await context.close();
    }
  }, 90_000);

  it("a viewer sees no write control, and the API refuses each write; a developer may not change suppressions", async () => {
    const viewer = await createMember(t, "viewer");
    const { context, page } = await signedIn(viewer);
    try {
      await open(page, "/sending-domains");
      await shown(page.getByRole("link", { name: "phone.acme-dashboard.example.com" }));
      await countSoon(page.getByRole("button", { name: "Add the domain" }), 0);
      await page.getByRole("link", { name: "phone.acme-dashboard.example.com" }).click();
      await shown(page.getByRole("region", { name: "DNS records", exact: true }));
      await countSoon(page.getByRole("button", { name: "Verify now" }), 0);
      await countSoon(page.getByRole("button", { name: "Delete the domain" }), 0);
      await expectNoAxeViolations(page);

      await open(page, "/suppressions");
      await shown(page.getByText("a-rather-long-address.for-a-phone@subdomain.example.com"));
      await countSoon(page.getByRole("button", { name: "Suppress" }), 0);
      await countSoon(page.getByRole("button", { name: /^Remove/ }), 0);

      await open(page, "/webhooks");
      await page.getByRole("link", { name: `http://127.0.0.1:${receiver.port}/phone` }).click();
      await shown(page.getByRole("region", { name: "Deliveries", exact: true }).getByText("Delivered"));
      await countSoon(page.getByRole("button", { name: /^Send again/ }), 0);
      await countSoon(page.getByRole("button", { name: "Turn off" }), 0);
      await countSoon(page.getByRole("heading", { name: "Change the endpoint" }), 0);
      await expectNoAxeViolations(page);
    } finally {
      await context.close();
    }

    // The API, not only the page: every write of these pages is refused to the viewer, and nothing changed.
    const session = await signIn(t, viewer);
    const domainId = ((await sessionCall(t, session, "GET", "/api/v1/domains?limit=100")).body.items as Array<{ id: string }>)[0]!.id;
    const webhookId = ((await sessionCall(t, session, "GET", "/api/v1/webhooks?limit=100")).body.items as Array<{ id: string }>)[0]!.id;
    const deliveryId = ((await sessionCall(t, session, "GET", `/api/v1/webhooks/${webhookId}/deliveries?limit=10`)).body.items as Array<{ id: string }>)[0]!.id;
    const writes: Array<[string, string, unknown?]> = [
      ["POST", "/api/v1/domains", { name: "viewer.acme-dashboard.example.com" }],
      ["POST", `/api/v1/domains/${domainId}/verify`],
      ["DELETE", `/api/v1/domains/${domainId}`],
      ["POST", "/api/v1/suppressions", { email: "viewer-added@example.com", reason: "manual" }],
      ["DELETE", `/api/v1/suppressions/${encodeURIComponent("a-rather-long-address.for-a-phone@subdomain.example.com")}?reason=viewer`],
      ["POST", "/api/v1/webhooks", { url: `http://127.0.0.1:${receiver.port}/viewer`, events: ["*"] }],
      ["PATCH", `/api/v1/webhooks/${webhookId}`, { is_active: false }],
      ["POST", `/api/v1/webhooks/${webhookId}/rotate-secret`],
      ["POST", `/api/v1/webhooks/${webhookId}/deliveries/${deliveryId}/replay`],
      ["DELETE", `/api/v1/webhooks/${webhookId}`],
    ];
    for (const [method, path, body] of writes) {
      const res = await sessionCall(t, session, method, path, body === undefined ? {} : { body });
      expect({ method, path, status: res.status, code: res.body?.code }).toEqual({ method, path, status: 403, code: "role_forbidden" });
    }
    expect((await sessionCall(t, adminSession, "GET", "/api/v1/domains?limit=100")).body.items).toHaveLength(1);
    expect((await sessionCall(t, adminSession, "GET", `/api/v1/webhooks/${webhookId}`)).body.is_active).toBe(true);
    expect((await sessionCall(t, adminSession, "GET", "/api/v1/suppressions?limit=100")).body.items.map((s: { email: string }) => s.email)).not.toContain("viewer-added@example.com");

    // A developer builds the integration (domains, webhooks) but does not run the audience: no suppression controls, refused by the API.
    const developer = await createMember(t, "developer");
    const dev = await signedIn(developer);
    try {
      await open(dev.page, "/suppressions");
      await shown(dev.page.getByText("a-rather-long-address.for-a-phone@subdomain.example.com"));
      await countSoon(dev.page.getByRole("button", { name: "Suppress" }), 0);
      await open(dev.page, "/webhooks");
      await shown(dev.page.getByRole("button", { name: "Create the endpoint" }));
    } finally {
      await dev.context.close();
    }
    const devSession = await signIn(t, developer);
    const refused = await sessionCall(t, devSession, "POST", "/api/v1/suppressions", { body: { email: "dev-added@example.com", reason: "manual" } });
    expect({ status: refused.status, code: refused.body.code }).toEqual({ status: 403, code: "role_forbidden" });
  }, 90_000);
});
