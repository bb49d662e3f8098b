import { expectNoAxeViolations, launchChromium } from "@emailsvc/testing";
import { signToken } from "@emailsvc/tokens";
import type { Browser, BrowserContext } from "playwright-core";
import { eventually, startTestPlatform, type TestPlatform } from "./support/platform-client";

// Double opt-in end to end, as the person who signed up lives it: the
// confirmation mail goes through the platform's own send path (captured in
// the sandbox, as test-mode mail is), its link is opened in headless
// Chromium, the page's button is clicked, and the subscriber is active with
// the click in the consent record of their export. A GET of the link alone
// (a mail scanner) confirms nothing.

let browser: Browser;
let context: BrowserContext;
beforeAll(async () => {
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 360, height: 740 }, userAgent: "Mozilla/5.0 (OptInTest) Chromium" });
});
afterAll(async () => {
  await browser?.close();
});

describe.each(["embedded", "mongodb"] as const)("double opt-in (%s)", (store) => {
  let t: TestPlatform;
  beforeAll(async () => {
    t = await startTestPlatform(`double-opt-in-${store}`, undefined, { mongo: store === "mongodb" });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  interface EmailJson {
    id: string;
    to: string;
    status: string;
  }

  /** The confirmation mail to `address` as the sandbox captured it. */
  async function confirmationMail(address: string): Promise<{ html: string; subject: string; link: string }> {
    const sent = await eventually(
      async () => ((await t.call("GET", "/api/v1/emails?limit=500")).body.items as EmailJson[]).filter((e) => e.to === address && e.status === "sent"),
      (found) => found.length > 0,
    );
    expect(sent).toHaveLength(1);
    const message = await t.call("GET", `/api/v1/emails/${sent[0]!.id}/sandbox`);
    expect(message.status).toBe(200);
    const html = message.body.html as string;
    // Handlebars escapes `=` in attribute values (&#x3D;), which a browser reads back as `=`.
    const href = /href="([^"]*\/confirm\?[^"]+)"/.exec(html)?.[1]?.replace(/&#x3D;/g, "=").replace(/&amp;/g, "&");
    if (!href) throw new Error(`no confirmation link in: ${html.match(/<a[^>]*>/g)?.join(" ")}`);
    return { html, subject: message.body.subject as string, link: href.replace("localhost", "127.0.0.1") };
  }

  const statusOf = async (id: string) => (await t.call("GET", `/api/v1/subscribers/${id}`)).body.status as string;

  describe("double opt-in through a mail and a click", () => {
    it("creates pending, mails the link, shows a button on GET and confirms on its click; the consent record keeps the wording and the click", async () => {
      const created = await t.call("POST", "/api/v1/subscribers", {
        body: { email: "reader@example.com", double_opt_in: true, locale: "en", consent: { text: "Send me the weekly news.", version: "2026-11", source_id: "footer" } },
        headers: { "user-agent": "IntegratorBackend/1.0" },
      });
      expect(created.status).toBe(201);
      expect(created.body.status).toBe("pending");
      const id = created.body.id as string;

      const mail = await confirmationMail("reader@example.com");
      expect(mail.subject).toBe("Please confirm your subscription");

      // A link scanner fetches the link: nothing happens.
      const scanned = await fetch(mail.link, { headers: { "user-agent": "LinkScanner/1.0" } });
      expect(scanned.status).toBe(200);
      expect(scanned.headers.get("content-security-policy")).toContain("default-src 'none'");
      expect(scanned.headers.get("content-security-policy")).not.toContain("unsafe-inline");
      await scanned.text();
      expect(await statusOf(id)).toBe("pending");

      const page = await context.newPage();
      const opened = await page.goto(mail.link);
      expect(opened?.status()).toBe(200);
      await expect(page.title()).resolves.toBe("Confirm your subscription");
      await expectNoAxeViolations(page);
      expect(await statusOf(id)).toBe("pending");
      await page.getByRole("button", { name: "Yes, subscribe me" }).click();
      await page.waitForLoadState("load");
      await expect(page.title()).resolves.toBe("Subscription confirmed");
      await expectNoAxeViolations(page);
      expect(await statusOf(id)).toBe("active");

      // The link again: used, nothing changes.
      const again = await context.newPage();
      await again.goto(mail.link);
      await expect(again.title()).resolves.toBe("This link was used already");
      await again.close();

      // The export (the subscriber's own, through their preference link) holds the consent record: the request and the click.
      const link = (await t.call("POST", `/api/v1/subscribers/${id}/preference-token`)).body as { token: string };
      const exported = await eventually(
        async () => (await t.call("GET", "/api/v1/preference-center/export", { key: null, headers: { authorization: `Bearer ${link.token}` } })).body,
        (body) => Array.isArray(body.consent) && body.consent.length === 2,
      );
      const consent = exported.consent as Array<Record<string, unknown>>;
      expect(consent.map((c) => c.action)).toEqual(["opt_in_requested", "confirmed"]);
      expect(consent[0]).toMatchObject({ source: "api", user_agent: "IntegratorBackend/1.0", wording: { text: "Send me the weekly news.", version: "2026-11", source_id: "footer" } });
      expect(consent[1]).toMatchObject({ source: "portal", user_agent: "Mozilla/5.0 (OptInTest) Chromium" });
      expect(consent[1]!.ip).toMatch(/127\.0\.0\.1/);
      await page.close();
    });

    it("refuses forged and expired links with a clear page, and confirms nothing", async () => {
      const created = await t.call("POST", "/api/v1/subscribers", { body: { email: "forged@example.com", double_opt_in: true } });
      const id = created.body.id as string;
      const portal = t.platform.portalUrl!;

      const expired = signToken(t.platform.tokenKeys, { purpose: "confirm", accountId: t.accountId, mode: "test", subscriberId: id }, { ttlSeconds: 60, now: Date.now() - 3_600_000 });
      const page = await context.newPage();
      expect((await page.goto(`${portal}/confirm?token=${expired}`))?.status()).toBe(403);
      await expect(page.getByText("The link has expired").count()).resolves.toBe(1);

      // A preference link's token is no confirmation token; a tampered one verifies nothing.
      const preference = signToken(t.platform.tokenKeys, { purpose: "preferences", accountId: t.accountId, mode: "test", subscriberId: id }, { ttlSeconds: 600 });
      const valid = signToken(t.platform.tokenKeys, { purpose: "confirm", accountId: t.accountId, mode: "test", subscriberId: id }, { ttlSeconds: 600 });
      for (const token of [preference, `${valid.slice(0, -2)}xx`]) {
        expect((await page.goto(`${portal}/confirm?token=${token}`))?.status()).toBe(403);
        await expect(page.title()).resolves.toBe("This link does not work");
        // Posted straight, without the page: refused the same way.
        const posted = await fetch(`${portal}/confirm`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: `token=${encodeURIComponent(token)}` });
        expect(posted.status).toBe(403);
        await posted.text();
      }
      expect(await statusOf(id)).toBe("pending");
      await page.close();
    });

    it("fires subscriber.created triggers on the confirmation, not on the creation", async () => {
      const template = await t.call("POST", "/api/v1/templates", {
        body: { name: "Welcome", subject: "Welcome", category: "transactional", mjml_content: "<mjml><mj-body><mj-section><mj-column><mj-text>Welcome aboard</mj-text></mj-column></mj-section></mj-body></mjml>" },
      });
      const trigger = await t.call("POST", "/api/v1/triggers", { body: { event_type: "subscriber.created", template_id: template.body.id } });
      expect(trigger.status).toBe(201);
      try {
        const id = (await t.call("POST", "/api/v1/subscribers", { body: { email: "welcome-later@example.com", double_opt_in: true } })).body.id as string;
        const fires = async () => (await t.call("GET", `/api/v1/subscribers/${id}/export`)).body.trigger_sends as Array<{ trigger_id: string; state: string; reason: string | null }>;
        // The creation's fire is decided (skipped: not a signup yet) and only the confirmation mail went out.
        expect(await eventually(fires, (list) => list.length === 1 && list[0]!.state !== "pending")).toEqual([expect.objectContaining({ trigger_id: trigger.body.id, state: "skipped", reason: "created_not_active" })]);
        const mail = await confirmationMail("welcome-later@example.com");

        // Confirmed (the page's POST, as the button sends it): now the welcome mail goes.
        const token = new URL(mail.link).searchParams.get("token")!;
        const posted = await fetch(`${t.platform.portalUrl}/confirm`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: `token=${encodeURIComponent(token)}` });
        expect(posted.status).toBe(200);
        await posted.text();
        const after = await eventually(fires, (list) => list.length === 2 && list.every((f) => f.state !== "pending"));
        expect(after.map((f) => f.state).sort()).toEqual(["sent", "skipped"]);
        const welcomes = await eventually(
          async () => ((await t.call("GET", "/api/v1/emails?limit=500")).body.items as Array<EmailJson & { template_id: string }>).filter((e) => e.to === "welcome-later@example.com" && e.template_id === template.body.id),
          (found) => found.length === 1,
        );
        expect(welcomes).toHaveLength(1);
      } finally {
        await t.call("DELETE", `/api/v1/triggers/${trigger.body.id}`);
      }
    });
  });

  describe("double opt-in settings through the REST API", () => {
    it("reads the defaults, changes the fields given, and refuses bad values changing nothing", async () => {
      const defaults = await t.call("GET", "/api/v1/audience-settings");
      expect(defaults.status).toBe(200);
      expect(defaults.body).toEqual({ double_opt_in: true, double_opt_in_for_api: false, confirmation_expiry_seconds: 604800, confirmation_template: null });

      const changed = await t.call("PATCH", "/api/v1/audience-settings", { body: { double_opt_in_for_api: true, confirmation_expiry_seconds: 86400 } });
      expect(changed.status).toBe(200);
      expect(changed.body).toEqual({ double_opt_in: true, double_opt_in_for_api: true, confirmation_expiry_seconds: 86400, confirmation_template: null });
      // API creates now follow double opt-in; a create that sets a status does not.
      expect((await t.call("POST", "/api/v1/subscribers", { body: { email: "by-setting@example.com" } })).body.status).toBe("pending");
      expect((await t.call("POST", "/api/v1/subscribers", { body: { email: "own-consent@example.com", status: "active" } })).body.status).toBe("active");
      const pending = await t.call("GET", "/api/v1/subscribers?status=pending&limit=100");
      expect((pending.body.items as Array<{ email: string }>).map((s) => s.email)).toContain("by-setting@example.com");

      for (const body of [{ confirmation_expiry_seconds: 10 }, { confirmation_template: "Not A Slug" }, { unknown: true }, {}]) {
        const refused = await t.call("PATCH", "/api/v1/audience-settings", { body });
        expect(refused.status).toBe(400);
        expect(refused.body.code).toBe("validation_failed");
      }
      // pending is not settable by a create.
      const settable = await t.call("POST", "/api/v1/subscribers", { body: { email: "no-pending@example.com", status: "pending" } });
      expect(settable.status).toBe(400);
      // Nor is a status with double_opt_in (the document says so too).
      const both = await t.call("POST", "/api/v1/subscribers", { body: { email: "no-pending@example.com", double_opt_in: true, status: "active" } });
      expect(both.status).toBe(400);
      expect(both.body.code).toBe("validation_failed");
      expect((await t.call("PATCH", "/api/v1/audience-settings", { body: { double_opt_in_for_api: false, confirmation_expiry_seconds: 604800 } })).status).toBe(200);
      expect((await t.call("GET", "/api/v1/audience-settings")).body).toEqual(defaults.body);
    });
  });
});
