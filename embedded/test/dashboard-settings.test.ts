import { expectFitsViewport, expectNoAxeViolations, launchChromium, startKubeCluster, tabUntilFocused, type KubeCluster, startTestDnsServer, type TestDnsServer } from "@emailsvc/testing";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { GENEROUS_RATE_LIMIT_ENV } from "../../services/gateway/test/support/harness";
import { objectNames } from "../../services/portal/src/kube/routing";
import { browserSignIn, createMember, sessionCall, type DashboardSession } from "./support/dashboard-session";
import { eventually, startTestPlatform, type TestPlatform } from "./support/platform-client";

// The dashboard's settings pages in headless Chromium, as a new customer
// lives them: the operator creates a Professional account with its owner's
// invitation, the owner accepts it in the browser, creates an API key and
// sees it once, sets the custom domain and watches it become active (the
// portal's reconciler asks a DNS server started here and writes to a real
// Kubernetes API server, where the test plays cert-manager, as
// custom-domain.test.ts does), brands the preference page and sees it there,
// invites a viewer who accepts in a second browser, sees no write controls
// and is refused by the API, is removed and loses the session at once; the
// audit log lists it all. Every page and state is checked with axe, the
// list pages on a 360 px phone too.

const TARGET = "domains.mail.example.net";
const NAMESPACE = "emailsvc";
const DOMAIN = "news.acme-shop.example.com";
const OWNER = "owner@acme-shop.example";
const VIEWER = "viewer@acme-shop.example";

let kube: KubeCluster;
let dns: TestDnsServer;
let t: TestPlatform;
let browser: Browser;
let owner: BrowserContext;
let page: Page;
/** The Professional account made by the operator. */
let acme: { id: string };
let operatorLiveKey: string | undefined;

/** A live key of Acme from the operator, to read its sandboxed mail and data (made after the API keys page showed its empty state). */
async function liveKey(): Promise<string> {
  operatorLiveKey ??= (await t.call("POST", `/admin/v1/accounts/${acme.id}/api-keys`, { admin: true, body: { mode: "live" } })).body.key as string;
  return operatorLiveKey!;
}

const dashboard = (path = "/") => `${t.url}/dashboard${path}`;

/** A mail the platform sent to `to` in the account's live mode (captured by the sandbox provider), with the link it carries. */
async function mailedLink(to: string, path: string): Promise<string> {
  const sent = await eventually(
    async () => ((await t.call("GET", "/api/v1/emails?limit=100", { key: await liveKey() })).body.items as Array<{ id: string; to: string; status: string }>).filter((e) => e.to === to && e.status === "sent"),
    (found) => found.length > 0,
  );
  expect(sent.length).toBeGreaterThan(0);
  const message = await t.call("GET", `/api/v1/emails/${sent[0]!.id}/sandbox`, { key: await liveKey() });
  const html = (message.body.html as string).replace(/&#x3D;/g, "=").replace(/&amp;/g, "&");
  const link = new RegExp(`href="([^"]*/dashboard/${path}#token=[^"]+)"`).exec(html)?.[1];
  if (!link) throw new Error(`no ${path} link in the mail`);
  // The link names PUBLIC_API_URL; the browser opens this platform's gateway.
  return `${t.url}${new URL(link).pathname}${new URL(link).hash}`;
}

/** The session a browser context holds, for calls through the API as that member. */
async function sessionOf(context: BrowserContext): Promise<DashboardSession> {
  const cookie = (await context.cookies(t.url)).find((c) => c.name.endsWith("emailsvc_session"));
  if (!cookie) throw new Error("the context holds no session cookie");
  const res = await fetch(`${t.url}/api/v1/session`, { headers: { cookie: `${cookie.name}=${cookie.value}` } });
  const body = (await res.json()) as { csrf_token: string };
  return { cookie: `${cookie.name}=${cookie.value}`, csrf: body.csrf_token, name: cookie.name, value: cookie.value };
}

/** Waits until no part of the page is still loading (every "Loading…" status gone). */
async function settled(p: Page): Promise<void> {
  const loading = p.getByRole("status").filter({ hasText: "Loading" });
  const left = await eventually(() => loading.count(), (count) => count === 0);
  expect(left).toBe(0);
}

async function heading(p: Page, name: string | RegExp): Promise<void> {
  await p.getByRole("heading", { level: 1, name }).waitFor();
}

beforeAll(async () => {
  kube = await startKubeCluster();
  await kube.applyCrds("cert-manager");
  await kube.createNamespace(NAMESPACE);
  dns = await startTestDnsServer();
  t = await startTestPlatform("dashboard-settings", {
    ...GENEROUS_RATE_LIMIT_ENV,
    CUSTOM_DOMAINS_ENABLED: "true",
    CUSTOM_DOMAIN_TARGET: TARGET,
    CUSTOM_DOMAIN_NAMESPACE: NAMESPACE,
    CUSTOM_DOMAIN_ISSUER_NAME: "letsencrypt",
    CUSTOM_DOMAIN_ISSUER_KIND: "ClusterIssuer",
    CUSTOM_DOMAIN_INGRESS_CLASS: "nginx",
    CUSTOM_DOMAIN_SERVICE_NAME: "emailsvc-portal",
    CUSTOM_DOMAIN_SERVICE_PORT: "8081",
    CUSTOM_DOMAIN_INSTANCE: "dash",
    CUSTOM_DOMAIN_DNS_SERVERS: dns.address,
    CUSTOM_DOMAIN_RECONCILE_INTERVAL_MS: "50",
    CUSTOM_DOMAIN_RECHECK_BASE_MS: "50",
    KUBECONFIG: await kube.kubeconfigFile(undefined, NAMESPACE),
  });
  browser = await launchChromium();
  owner = await browser.newContext({ viewport: { width: 1280, height: 900 }, locale: "en-US" });
  await owner.grantPermissions(["clipboard-read", "clipboard-write"], { origin: t.url });
  page = await owner.newPage();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
  await dns?.close();
  await kube?.stop();
});

describe("the dashboard's settings, as a new customer", () => {
  it("the operator's invitation, accepted in the browser, signs the owner in", async () => {
    const created = await t.call("POST", "/admin/v1/accounts", { admin: true, body: { name: "Acme Shop", plan: "professional", owner_email: OWNER } });
    expect(created.status).toBe(201);
    acme = { id: created.body.id };
    const url = new URL(created.body.owner_invitation.url as string);
    await page.goto(dashboard(`${url.pathname.replace(/^\/dashboard/, "")}${url.hash}`));
    await heading(page, "Accept your invitation");
    await expectNoAxeViolations(page);
    await page.getByLabel("Name").fill("Olivia Owner");
    await page.getByLabel("New password").fill("a long owner password");
    await page.getByRole("button", { name: "Join and sign in" }).click();
    await heading(page, "Overview");
    // The token left the address bar.
    expect(page.url()).not.toContain("token=");
    await expectNoAxeViolations(page);
  });

  it("creates an API key and shows it once, lists it masked, revokes it", async () => {
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "API keys" }).click();
    await heading(page, "API keys");
    await page.getByText("No API keys yet").waitFor();
    await expectNoAxeViolations(page);

    await page.getByLabel("Name").fill("Shop backend");
    await page.getByLabel("Mode").selectOption("test");
    await page.getByRole("button", { name: "Create the key" }).click();
    const shown = page.getByLabel("The new key");
    await shown.waitFor();
    const key = (await shown.textContent())!;
    expect(key).toMatch(/^sk_test_/);
    await page.getByText("you will not see it again").waitFor();
    await expectNoAxeViolations(page);
    // The key works: it is the account's.
    expect((await t.call("GET", "/api/v1/tags", { key })).status).toBe(200);
    await page.getByRole("button", { name: "Copy the key" }).click();
    // (The test's TypeScript has no DOM types: the browser's globals through globalThis.)
    await expect(page.evaluate(() => (globalThis as unknown as { navigator: { clipboard: { readText(): Promise<string> } } }).navigator.clipboard.readText())).resolves.toBe(key);

    // A reload: the key is gone for good, the list shows it masked.
    await page.reload();
    await heading(page, "API keys");
    const row = page.getByRole("row", { name: /Shop backend/ });
    await row.waitFor();
    await expect(page.content()).resolves.not.toContain(key);
    await expect(row.getByText(`sk_test_…${key.slice(-4)}`).count()).resolves.toBe(1);

    await row.getByRole("button", { name: "Revoke Shop backend" }).click();
    const dialog = page.getByRole("dialog", { name: "Revoke this key?" });
    await expectNoAxeViolations(page);
    await dialog.getByRole("button", { name: "Revoke" }).click();
    await row.getByText(/^Revoked/).waitFor();
    expect((await t.call("GET", "/api/v1/tags", { key })).status).toBe(401);
  });

  it("sets the custom domain with the keyboard and shows its state as it moves to active", async () => {
    await page.goto(dashboard("/settings/preference-center"));
    await heading(page, "Preference Center");
    await page.getByRole("heading", { level: 2, name: "Custom Domain" }).waitFor();
    await page.getByText("No custom domain yet").waitFor();
    await expectNoAxeViolations(page);

    const input = page.getByRole("textbox", { name: "Domain" });
    await tabUntilFocused(page, input, 40);
    await page.keyboard.type(DOMAIN);
    await page.keyboard.press("Enter");
    await page.getByText("Pending DNS", { exact: true }).waitFor();
    // The record to publish names the deployment's target, as the API says it.
    const record = page.locator(".record");
    await record.getByText(TARGET, { exact: true }).waitFor();
    await expectNoAxeViolations(page);

    // The reason moves with what DNS shows, without a reload.
    await page.getByText(/no CNAME record for news\.acme-shop\.example\.com is visible yet/).waitFor();
    dns.cnames.set(DOMAIN, TARGET);
    await page.getByText("Issuing", { exact: true }).waitFor({ timeout: 30_000 });
    await expectNoAxeViolations(page);
    const certificate = `/apis/cert-manager.io/v1/namespaces/${NAMESPACE}/certificates/${objectNames({ accountId: acme.id, domain: DOMAIN }).name}`;
    const ready = await kube.request("PATCH", `${certificate}/status`, {
      body: { status: { conditions: [{ type: "Ready", status: "True", reason: "Ready", message: "Certificate is up to date", lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, "Z") }] } },
      contentType: "application/merge-patch+json",
    });
    expect(ready.status).toBe(200);
    await page.getByText("Active", { exact: true }).waitFor({ timeout: 30_000 });
    await page.getByText(`https://${DOMAIN}/preferences`).waitFor();
    await expectNoAxeViolations(page);
  }, 90_000);

  it("saves the branding and the preference page shows it; translates a tag", async () => {
    const tag = await t.call("POST", "/api/v1/tags", { key: await liveKey(), body: { name: "Weekly news", is_public: true, description: "Every Monday" } });
    await page.reload();
    await heading(page, "Preference Center");
    await page.getByLabel("Sender name").fill("Acme Shop");
    await page.getByLabel("Logo URL").fill("https://cdn.acme-shop.example/logo.png");
    await page.getByLabel("Colour").fill("#ffcc00");
    await page.getByRole("button", { name: "Save the branding" }).click();
    // Too light for white text: the API's reason beside the field, nothing saved.
    await page.getByText(/contrast of 1\.\d+:1 with white/).first().waitFor();
    await expectNoAxeViolations(page);
    await page.getByLabel("Colour").fill("#1a4d2e");
    await page.getByRole("button", { name: "Save the branding" }).click();
    await page.getByText("Branding saved.").waitFor();
    expect((await t.call("GET", "/api/v1/portal-settings", { key: await liveKey() })).body).toMatchObject({
      sender_name: "Acme Shop",
      logo_url: "https://cdn.acme-shop.example/logo.png",
      brand_color: "#1a4d2e",
    });

    await page.getByRole("button", { name: "Edit the translations of Weekly news" }).click();
    await page.getByLabel("Name in German").fill("Wochennews");
    await page.getByLabel("Description in German").fill("Jeden Montag");
    await page.getByRole("button", { name: "Save the translations" }).click();
    await page.getByRole("cell", { name: "Wochennews" }).waitFor();
    expect((await t.call("GET", `/api/v1/tags/${tag.body.id}`, { key: await liveKey() })).body.translations).toEqual({ de: { name: "Wochennews", description: "Jeden Montag" } });

    // The subscriber's page: the sender, the logo and the colour.
    const sub = await t.call("POST", "/api/v1/subscribers", { key: await liveKey(), body: { email: "reader@example.com", tags: ["Weekly news"] } });
    const link = (await t.call("POST", `/api/v1/subscribers/${sub.body.id}/preference-token`, { key: await liveKey() })).body.url as string;
    const portal = await owner.newPage();
    // The page's CSP allows the logo's origin (the image itself cannot load here: no such host).
    const refusals: string[] = [];
    portal.on("console", (message) => {
      if (/Content Security Policy/.test(message.text())) refusals.push(message.text());
    });
    // The link names the active custom domain, which this browser cannot resolve: the same path on the
    // platform's own portal host (PREFERENCES_URL's, localhost), which serves every account.
    expect(link.startsWith(`https://${DOMAIN}/preferences?token=`)).toBe(true);
    await portal.goto(`${t.platform.portalUrl!.replace("127.0.0.1", "localhost")}${new URL(link).pathname}${new URL(link).search}`);
    await heading(portal, "Your subscriptions with Acme Shop");
    await expect(portal.getByRole("img", { name: "Acme Shop" }).getAttribute("src")).resolves.toBe("https://cdn.acme-shop.example/logo.png");
    const linkColour = await portal
      .getByRole("link", { name: "Deutsch" })
      .evaluate((el) => (globalThis as unknown as { getComputedStyle(e: unknown): { color: string } }).getComputedStyle(el).color);
    expect(linkColour).toBe("rgb(26, 77, 46)");
    expect(refusals).toEqual([]);
    await expectNoAxeViolations(portal);
    await portal.close();
  });

  describe("a viewer", () => {
    let viewer: BrowserContext;
    let viewerPage: Page;

    it("is invited from the members page and accepts in another browser", async () => {
      await page.goto(dashboard("/members"));
      await heading(page, "Members");
      await page.getByText("No open invitations.").waitFor();
      await expectNoAxeViolations(page);
      await page.getByLabel("Email address").fill(VIEWER);
      await page.getByLabel("Role", { exact: true }).selectOption("viewer");
      await page.getByRole("button", { name: "Send the invitation" }).click();
      await page.getByRole("row", { name: new RegExp(VIEWER) }).waitFor();
      await expectNoAxeViolations(page);

      viewer = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      viewerPage = await viewer.newPage();
      await viewerPage.goto(await mailedLink(VIEWER, "accept"));
      await heading(viewerPage, "Accept your invitation");
      await viewerPage.getByLabel("Name").fill("Victor Viewer");
      await viewerPage.getByLabel("New password").fill("a long viewer password");
      await viewerPage.getByRole("button", { name: "Join and sign in" }).click();
      await heading(viewerPage, "Overview");

      await page.reload();
      await page.getByRole("row", { name: /Victor Viewer/ }).waitFor();
      await page.getByText("No open invitations.").waitFor();
    });

    it("sees no write controls, and the API refuses their writes", async () => {
      await viewerPage.goto(dashboard("/api-keys"));
      await heading(viewerPage, "API keys");
      await viewerPage.getByRole("row", { name: /Shop backend/ }).waitFor();
      await expect(viewerPage.getByRole("button", { name: "Create the key" }).count()).resolves.toBe(0);
      await expect(viewerPage.getByRole("button", { name: /^Revoke/ }).count()).resolves.toBe(0);
      await expectNoAxeViolations(viewerPage);

      await viewerPage.goto(dashboard("/settings/preference-center"));
      await heading(viewerPage, "Preference Center");
      await viewerPage.getByText("Active", { exact: true }).waitFor();
      for (const name of ["Set the domain", "Replace the domain", "Remove the domain", "Save the branding", /^Edit the translations/]) {
        await expect(viewerPage.getByRole("button", { name }).count()).resolves.toBe(0);
      }
      await expect(viewerPage.getByLabel("Sender name").isDisabled()).resolves.toBe(true);
      await expectNoAxeViolations(viewerPage);

      await viewerPage.goto(dashboard("/members"));
      await viewerPage.getByRole("row", { name: /Olivia Owner/ }).waitFor();
      await expect(viewerPage.getByRole("button", { name: "Send the invitation" }).count()).resolves.toBe(0);
      await expect(viewerPage.getByRole("button", { name: /^Remove/ }).count()).resolves.toBe(0);

      // The audit log is for admins: the page shows the API's refusal as its error state.
      await viewerPage.goto(dashboard("/audit-log"));
      await heading(viewerPage, "Audit log");
      await viewerPage.getByRole("alert").getByText("Not allowed.").waitFor();
      await expectNoAxeViolations(viewerPage);

      // Not the buttons alone: the API refuses every kind of write of these pages.
      const session = await sessionOf(viewer);
      for (const [method, path, body] of [
        ["POST", "/api/v1/api-keys", { mode: "test" }],
        ["PUT", "/api/v1/settings/preference-center/custom-domain", { domain: "other.acme-shop.example" }],
        ["PATCH", "/api/v1/portal-settings", { sender_name: "Hijacked" }],
        ["POST", "/api/v1/invitations", { email: "friend@example.com", role: "owner" }],
      ] as const) {
        const refused = await sessionCall(t, session, method, path, { body });
        expect({ method, path, status: refused.status, code: refused.body.code }).toEqual({ method, path, status: 403, code: "role_forbidden" });
      }
      expect((await t.call("GET", "/api/v1/portal-settings", { key: await liveKey() })).body.sender_name).toBe("Acme Shop");
    });

    it("gets another role, then is removed by the owner (typing the address to confirm) and the session dies at once", async () => {
      await page.goto(dashboard("/members"));
      await page.getByLabel("Role of Victor Viewer").selectOption("developer");
      await page.getByText("Victor Viewer is now Developer.").waitFor();
      const session = await sessionOf(viewer);
      expect((await sessionCall(t, session, "GET", "/api/v1/session")).body.member.role).toBe("developer");
      await page.getByRole("button", { name: "Remove Victor Viewer" }).click();
      const dialog = page.getByRole("dialog", { name: "Remove this member?" });
      await expect(dialog.getByRole("button", { name: "Remove" }).isDisabled()).resolves.toBe(true);
      await dialog.getByLabel(`Type ${VIEWER} to confirm`).fill(VIEWER);
      await expectNoAxeViolations(page);
      await dialog.getByRole("button", { name: "Remove" }).click();
      await page.getByText("Victor Viewer was removed.").waitFor();
      await page.getByRole("row", { name: /Victor Viewer/ }).waitFor({ state: "detached" });

      await viewerPage.reload();
      await heading(viewerPage, "Sign in");
      expect(new URL(viewerPage.url()).pathname).toBe("/dashboard/sign-in");
      await viewer.close();
    });
  });

  it("removes the custom domain after a confirmation", async () => {
    await page.goto(dashboard("/settings/preference-center"));
    await page.getByText("Active", { exact: true }).waitFor();
    await page.getByRole("button", { name: "Remove the domain" }).click();
    const dialog = page.getByRole("dialog", { name: "Remove the custom domain?" });
    await dialog.getByText(`${DOMAIN} is free for anyone`).waitFor();
    await expectNoAxeViolations(page);
    await dialog.getByRole("button", { name: "Remove the domain" }).click();
    await page.getByText("No custom domain yet").waitFor();
    expect((await t.call("GET", "/api/v1/settings/preference-center/custom-domain", { key: await liveKey() })).body.code).toBe("custom_domain_not_found");
  });

  it("lists these actions in the audit log: who, what, when, from where", async () => {
    await page.goto(dashboard("/audit-log"));
    await heading(page, "Audit log");
    for (const action of ["createKey", "revokeKey", "setCustomDomain", "deleteCustomDomain", "updatePortalSettings", "updateTag", "createInvitation", "updateMember", "deleteMember"]) {
      await page.getByRole("row", { name: new RegExp(action) }).first().waitFor();
    }
    await expect(page.getByRole("row", { name: /Olivia Owner|owner@acme-shop\.example/ }).count()).resolves.toBeGreaterThan(0);
    await expectNoAxeViolations(page);
  });

  it("reads on a 360 px phone, and in German", async () => {
    const phone = await browser.newContext({ viewport: { width: 360, height: 740 }, isMobile: true, hasTouch: true });
    const creds = await signInAsNewOwner();
    await browserSignIn(phone, t, creds);
    const small = await phone.newPage();
    for (const [path, title] of [
      ["/api-keys", "API keys"],
      ["/members", "Members"],
      ["/audit-log", "Audit log"],
      ["/settings/preference-center", "Preference Center"],
      ["/", "Overview"],
    ] as const) {
      await small.goto(dashboard(path));
      await heading(small, title);
      await settled(small);
      await expectFitsViewport(small);
      await expectNoAxeViolations(small);
    }
    await small.goto(dashboard("/api-keys"));
    await small.getByLabel("Language").selectOption("de");
    await heading(small, "API-Schlüssel");
    await small.getByRole("button", { name: "Schlüssel erstellen" }).waitFor();
    await expectNoAxeViolations(small);
    await phone.close();
  });
});

/** A second owner of the Acme account (its owner invites them), signed in through the API. */
async function signInAsNewOwner(): Promise<{ email: string; password: string }> {
  const session = await sessionOf(owner);
  const email = "second-owner@acme-shop.example";
  expect((await sessionCall(t, session, "POST", "/api/v1/invitations", { body: { email, role: "owner" } })).status).toBe(201);
  const link = await mailedLink(email, "accept");
  const token = new URL(link).hash.replace(/^#token=/, "");
  const password = "a long second password";
  const accepted = await fetch(`${t.url}/api/v1/invitations/accept`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ token, name: "Second Owner", password }) });
  expect(accepted.status).toBe(201);
  return { email, password };
}

describe("a starter account's owner", () => {
  it("is told the custom domain needs the Professional plan; the form is disabled and the API refuses it", async () => {
    const creds = await createMember(t, "owner");
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const session = await browserSignIn(context, t, creds);
    const starter = await context.newPage();
    await starter.goto(dashboard("/settings/preference-center"));
    await heading(starter, "Preference Center");
    await starter.getByText("Professional plan needed.").waitFor();
    await expect(starter.getByRole("textbox", { name: "Domain" }).isDisabled()).resolves.toBe(true);
    await expect(starter.getByRole("button", { name: "Set the domain" }).isDisabled()).resolves.toBe(true);
    await expectNoAxeViolations(starter);
    const refused = await sessionCall(t, session, "PUT", "/api/v1/settings/preference-center/custom-domain", { body: { domain: "news.small.example" } });
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe("plan_required");

    // The overview of a mode that sent nothing (the account's live mode sent the members' invitations): how to send the first email.
    await starter.goto(dashboard("/"));
    await heading(starter, "Overview");
    await starter.getByRole("radio", { name: "Test" }).check();
    await starter.getByRole("heading", { name: "Send your first email" }).waitFor();
    await starter.getByRole("link", { name: "Create an API key" }).waitFor();
    await expectNoAxeViolations(starter);

    // Sign out everywhere (the profile page): this session ends, the next page load asks to sign in.
    await starter.goto(dashboard("/profile"));
    await starter.getByRole("button", { name: "Sign out everywhere" }).click();
    await starter.getByRole("dialog").getByRole("button", { name: "Sign out everywhere" }).click();
    await heading(starter, "Sign in");
    expect((await sessionCall(t, session, "GET", "/api/v1/session")).status).toBe(401);
    await context.close();
  });

  it("offers an admin nothing that only an owner may do", async () => {
    const owner = await createMember(t, "owner", "owner-of-small@example.com");
    const admin = await createMember(t, "admin");
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const session = await browserSignIn(context, t, admin);
    const members = await context.newPage();
    await members.goto(dashboard("/members"));
    await heading(members, "Members");
    const ownerRow = members.getByRole("row", { name: /owner-of-small@example\.com/ });
    await ownerRow.waitFor();
    await expect(ownerRow.getByRole("combobox").count()).resolves.toBe(0);
    await expect(ownerRow.getByRole("button").count()).resolves.toBe(0);
    const roles = await members.getByLabel("Role", { exact: true }).locator("option").allTextContents();
    expect(roles).toEqual(["Admin", "Developer", "Viewer"]);
    await expectNoAxeViolations(members);
    // And the API agrees: an admin may not remove an owner.
    const refused = await sessionCall(t, session, "DELETE", `/api/v1/members/${owner.memberId}`);
    expect(refused.status).toBe(403);
    await context.close();
  });
});
