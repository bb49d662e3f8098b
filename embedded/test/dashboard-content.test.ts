import { expectFitsViewport, expectNoAxeViolations, launchChromium, SmtpSink, tabUntilFocused } from "@emailsvc/testing";
import type { Browser, BrowserContext, Locator, Page } from "playwright-core";
import { GENEROUS_RATE_LIMIT_ENV } from "../../services/gateway/test/support/harness";
import { browserSignIn, createMember, sessionCall, signIn, type MemberCredentials } from "./support/dashboard-session";
import { eventually, startTestPlatform, type TestPlatform } from "./support/platform-client";

// The dashboard's content pages in headless Chromium, as a new customer uses
// them: build a template in the MJML editor (a problem shown with its line,
// then fixed; the preview at desktop and phone width), send a test to
// oneself, send a campaign to a tag and watch it finish with counts that add
// up, find one of its messages in the emails log and open it as sent, create
// a trigger and turn it off. axe-core (WCAG 2.1 AA) on every page and state
// shown, the lists on a 360 px phone, keyboard only for a campaign's send,
// German on the email's page, and a viewer without write controls whose
// writes the API refuses. The data is the account's test mode (the test key
// creates the subscribers; the member switches the top bar to Test).

let t: TestPlatform;
let browser: Browser;
let admin: MemberCredentials;
let desktop: BrowserContext;
let page: Page;
const readers = ["ann", "bob", "cyd"].map((n) => `${n}-reader@example.com`);

/** The counts a campaign's page shows, by name (pending, queued, sent, failed, skipped, total). */
async function shownCounts(p: Page): Promise<Record<string, number>> {
  const cells = await p.locator("dd[data-count]").evaluateAll((els) => els.map((el) => [el.getAttribute("data-count"), el.textContent ?? ""] as const));
  return Object.fromEntries(cells.map(([name, text]) => [name, Number(text.replace(/[^0-9]/g, ""))]));
}

async function srcdoc(frame: Locator): Promise<string> {
  return (await frame.getAttribute("srcdoc")) ?? "";
}

async function open(p: Page, path: string, heading: string): Promise<void> {
  await p.goto(`${t.url}/dashboard${path}`);
  await p.getByRole("heading", { level: 1, name: heading }).waitFor();
}

/** The top bar's data switch on Test: the test key's subscribers, mail to the sandbox. */
async function testMode(p: Page): Promise<void> {
  await p.getByRole("radio", { name: "Test" }).check();
  await p.getByText("Test mode: you see the account's test data").waitFor();
}

beforeAll(async () => {
  t = await startTestPlatform("dashboard-content");
  browser = await launchChromium();
  admin = await createMember(t, "admin");
  expect((await t.call("POST", "/api/v1/tags", { body: { name: "readers" } })).status).toBe(201);
  expect((await t.call("POST", "/api/v1/tags", { body: { name: "others" } })).status).toBe(201);
  for (const email of readers) expect((await t.call("POST", "/api/v1/subscribers", { body: { email, tags: ["readers"], metadata: { first_name: email.split("-")[0] } } })).status).toBe(201);
  expect((await t.call("POST", "/api/v1/subscribers", { body: { email: "dan-other@example.com", tags: ["others"] } })).status).toBe(201);
  desktop = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await browserSignIn(desktop, t, admin);
  page = await desktop.newPage();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await t?.close();
});

const FIXED_MJML = `<mjml>
  <mj-body>
    <mj-section>
      <mj-column>
        <mj-text>Hello {{first_name}}, this is the readers' letter.</mj-text>
      </mj-column>
    </mj-section>
  </mj-body>
</mjml>
`;
// Line 5 opens an mj-text that line 6 does not close.
const BROKEN_MJML = FIXED_MJML.replace("</mj-text>", "");

describe("the dashboard's content pages", () => {
  let templateId: string;
  let campaignId: string;

  it("builds a template in the editor: an MJML problem shown with its line, then fixed; the preview at desktop and phone width; a test sent to oneself", async () => {
    await open(page, "/templates", "Templates");
    await testMode(page);
    await page.getByText("No templates yet.").waitFor();
    await expectNoAxeViolations(page);

    await page.getByRole("link", { name: "New template" }).click();
    await page.getByRole("heading", { level: 1, name: "New template" }).waitFor();
    await page.getByLabel("Name", { exact: true }).fill("Readers' letter");
    await page.getByLabel("Category").selectOption("marketing");
    await page.getByLabel("Subject").fill("News for {{first_name}}");
    const editor = page.getByLabel("MJML");
    await editor.fill(BROKEN_MJML);
    const problems = page.getByRole("alert").filter({ hasText: "Problems in the MJML" });
    await problems.waitFor();
    expect(await problems.textContent()).toMatch(/line 5: /);
    await expect(page.getByRole("button", { name: "Go to line 5" }).count()).resolves.toBe(1);
    await expectNoAxeViolations(page);

    await editor.fill(FIXED_MJML);
    await problems.waitFor({ state: "detached" });
    await page.getByLabel("first_name").fill("Ada");
    const wide = page.getByTitle("Preview at desktop width");
    const narrow = page.getByTitle("Preview at phone width");
    const rendered = await eventually(() => srcdoc(wide), (html) => html.includes("Hello Ada, this is"));
    expect(rendered).toContain("Hello Ada, this is");
    expect(await srcdoc(narrow)).toBe(rendered);
    expect(await page.getByTestId("preview-subject").textContent()).toBe("News for Ada");
    expect((await wide.boundingBox())!.width).toBeGreaterThanOrEqual(600);
    expect(Math.round((await narrow.boundingBox())!.width)).toBe(375);
    await expectNoAxeViolations(page);

    await page.getByRole("button", { name: "Create the template" }).click();
    await page.getByRole("heading", { level: 1, name: "Readers' letter" }).waitFor();
    templateId = /\/templates\/(tpl_[0-9a-z]+)$/.exec(page.url())![1]!;
    await page.getByRole("cell", { name: /^version 1/ }).waitFor();
    // A change of the subject makes version 2; version 1 opens read-only, rendered.
    await page.getByLabel("Subject").fill("Letter for {{first_name}}");
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByRole("link", { name: "version 2" }).waitFor();
    await page.getByRole("link", { name: "version 1" }).click();
    await page.getByRole("heading", { level: 1, name: "Version 1" }).waitFor();
    expect(await page.getByLabel("Subject").inputValue()).toBe("News for {{first_name}}");
    expect(await page.getByLabel("MJML").getAttribute("readonly")).not.toBeNull();
    expect(await eventually(() => srcdoc(page.getByTitle("Preview at desktop width")), (html) => html.includes("this is the readers"))).toContain("this is the readers");
    await expectNoAxeViolations(page);
    await page.getByRole("link", { name: "Back to the template" }).click();
    await page.getByRole("heading", { level: 1, name: "Readers' letter" }).waitFor();
    await page.getByLabel("first_name").fill("Ada");
    await page.getByRole("button", { name: "Send a test to me" }).click();
    const sent = page.getByRole("status").filter({ hasText: `A test to ${admin.email} is in the sandbox` });
    await sent.waitFor();
    await expectNoAxeViolations(page);

    await sent.getByRole("link", { name: "Open the email" }).click();
    await page.getByRole("heading", { level: 1, name: "Email" }).waitFor();
    const message = page.getByTitle("The message as sent");
    await message.waitFor();
    expect(await srcdoc(message)).toContain("Hello Ada, this is");
    expect(await page.getByTestId("sent-subject").textContent()).toBe("Letter for Ada");
    await expectNoAxeViolations(page);
  }, 90_000);

  it("sends a campaign to a tag: the live count matches, sent with the keyboard, its progress adds up until done", async () => {
    await open(page, "/campaigns", "Campaigns");
    await page.getByText("No campaigns yet.").waitFor();
    await expectNoAxeViolations(page);
    await page.getByRole("link", { name: "New campaign" }).click();
    await page.getByRole("heading", { level: 1, name: "New campaign" }).waitFor();
    await page.getByLabel("Name").fill("Readers, November");
    expect(await page.getByLabel("Template").inputValue()).toBe(templateId);
    // Everyone active first, then the tag: the count follows the filter.
    await page.getByText("4 recipients now").waitFor();
    await page.getByRole("group", { name: /Send to subscribers with these tags/ }).getByLabel("readers").check();
    await page.getByText(`${readers.length} recipients now`).waitFor();
    const count = await t.call("POST", "/api/v1/campaigns/recipient-count", { body: { tag_filter: { include_tags: ["readers"] } } });
    expect(count.body.count).toBe(readers.length);
    await expectNoAxeViolations(page);

    // Keyboard only: Tab to the send button, Enter; in the dialog, Tab to its confirmation, Enter.
    await tabUntilFocused(page, page.getByRole("button", { name: "Send now" }), 40);
    await page.keyboard.press("Enter");
    const dialog = page.getByRole("dialog", { name: "Send the campaign?" });
    await dialog.waitFor();
    await expectNoAxeViolations(page);
    await tabUntilFocused(page, dialog.getByRole("button", { name: "Send now" }));
    await page.keyboard.press("Enter");

    await page.waitForURL(/\/campaigns\/cmp_[0-9a-z]+$/);
    campaignId = /\/campaigns\/(cmp_[0-9a-z]+)$/.exec(page.url())![1]!;
    // Every read while it sends: the parts add up to the total.
    const seen: Array<Record<string, number>> = [];
    const done = await eventually(
      async () => {
        const status = (await page.locator("dd .badge").first().textContent()) ?? "";
        const counts = (await page.locator("dd[data-count]").count()) > 0 ? await shownCounts(page) : undefined;
        if (counts) seen.push(counts);
        return { status, counts };
      },
      (s) => s.status === "Sent" && s.counts?.sent === readers.length,
      600,
    );
    expect(done.status).toBe("Sent");
    expect(seen.length).toBeGreaterThan(0);
    for (const c of seen) expect(c.pending! + c.queued! + c.sent! + c.failed! + c.skipped!).toBe(c.total);
    expect(done.counts).toEqual({ pending: 0, queued: 0, sent: readers.length, failed: 0, skipped: 0, total: readers.length });
    await page.getByText(`${readers.length} of ${readers.length} recipients done.`).waitFor();
    await expectNoAxeViolations(page);
  }, 90_000);

  it("finds one of the campaign's messages in the emails log, opens it as sent, and reads it in German", async () => {
    await open(page, "/emails", "Emails");
    await page.getByLabel("Status").selectOption("sent");
    await page.waitForURL(/\?status=sent$/);
    const row = page.getByRole("row").filter({ hasText: readers[1]! });
    await row.waitFor();
    const statuses = await page.locator("tbody .badge").allTextContents();
    expect(statuses.length).toBeGreaterThanOrEqual(readers.length + 1);
    expect(new Set(statuses)).toEqual(new Set(["Sent"]));
    await expectNoAxeViolations(page);
    await row.getByRole("link").click();
    await page.getByRole("heading", { level: 1, name: "Email" }).waitFor();
    const message = page.getByTitle("The message as sent");
    await message.waitFor();
    // A campaign gives its template the subscriber's fields (here no `first_name`): the message as it went out.
    expect(await srcdoc(message)).toContain("this is the readers");
    await page.getByRole("definition").filter({ hasText: readers[1]! }).first().waitFor();
    expect(await page.getByTestId("sent-subject").textContent()).toMatch(/^Letter for/);
    await page.getByText("Headers").click();
    await page.getByRole("rowheader", { name: "List-Unsubscribe" }).waitFor();
    await page.getByRole("table").filter({ hasText: "Status history" }).or(page.getByRole("region", { name: "Status history" })).first().waitFor();
    await expectNoAxeViolations(page);

    await page.getByLabel("Language").selectOption("de");
    await page.getByRole("heading", { level: 1, name: "E-Mail" }).waitFor();
    await page.getByRole("heading", { level: 2, name: "Statusverlauf" }).waitFor();
    await page.getByText("Gesendet", { exact: true }).first().waitFor();
    await expectNoAxeViolations(page);
    await page.getByLabel("Sprache").selectOption("en");
    await page.getByRole("heading", { level: 1, name: "Email" }).waitFor();

    // The same message from its recipient's page: a subscriber's emails (the log narrowed to them).
    const subscriber = await t.call("GET", `/api/v1/subscribers/by-email/${encodeURIComponent(readers[1]!)}`);
    expect(subscriber.status).toBe(200);
    await open(page, `/subscribers/${subscriber.body.id}`, readers[1]!);
    const emails = page.getByRole("region", { name: "Emails", exact: true });
    await emails.getByRole("row").filter({ hasText: "Sent" }).first().waitFor();
    expect(await emails.locator("tbody tr").count()).toBe(1);
    await expectNoAxeViolations(page);
    await emails.getByRole("link").first().click();
    await page.getByRole("heading", { level: 1, name: "Email" }).waitFor();
    await page.getByRole("definition").filter({ hasText: readers[1]! }).first().waitFor();
  }, 60_000);

  it("creates a trigger and turns it off", async () => {
    await open(page, "/triggers", "Triggers");
    await page.getByText("No triggers yet.").waitFor();
    await expectNoAxeViolations(page);
    await page.getByRole("link", { name: "New trigger" }).click();
    await page.getByRole("heading", { level: 1, name: "New trigger" }).waitFor();
    await page.getByLabel("Event").selectOption("subscriber.created");
    await page.getByLabel("Template").selectOption(templateId);
    await page.getByLabel("Delay").fill("10");
    await page.getByLabel("Unit").selectOption("minutes");
    await expectNoAxeViolations(page);
    await page.getByRole("button", { name: "Create the trigger" }).click();
    await page.waitForURL(/\/triggers\/trg_[0-9a-z]+$/);
    const triggerId = /\/triggers\/(trg_[0-9a-z]+)$/.exec(page.url())![1]!;
    await page.getByText("On", { exact: true }).waitFor();
    expect((await t.call("GET", `/api/v1/triggers/${triggerId}`)).body).toMatchObject({ event_type: "subscriber.created", template_id: templateId, delay_seconds: 600, is_active: true });

    await page.getByRole("button", { name: "Turn off" }).click();
    await page.getByText("Off", { exact: true }).waitFor();
    expect((await t.call("GET", `/api/v1/triggers/${triggerId}`)).body.is_active).toBe(false);
    await expectNoAxeViolations(page);
    await open(page, "/triggers", "Triggers");
    await page.getByRole("row").filter({ hasText: "subscriber.created" }).filter({ hasText: "Off" }).waitFor();
  }, 60_000);

  it("shows an error for an id that is none of the account's", async () => {
    for (const path of ["/templates/tpl_00000000000000000000000000", "/campaigns/cmp_00000000000000000000000000", "/triggers/trg_00000000000000000000000000", "/emails/eml_00000000000000000000000000"]) {
      await page.goto(`${t.url}/dashboard${path}`);
      await page.getByRole("alert").filter({ hasText: "Not found." }).waitFor();
      await page.getByRole("button", { name: "Try again" }).waitFor();
    }
    await expectNoAxeViolations(page);
  }, 60_000);

  it("fits each list on a 360 px phone", async () => {
    const phone = await browser.newContext({ viewport: { width: 360, height: 740 }, isMobile: true, hasTouch: true });
    await browserSignIn(phone, t, admin);
    const p = await phone.newPage();
    await open(p, "/templates", "Templates");
    await testMode(p);
    for (const [path, heading, shown] of [
      ["/templates", "Templates", "table"],
      ["/campaigns", "Campaigns", "table"],
      ["/triggers", "Triggers", "table"],
      ["/emails", "Emails", "table"],
      [`/campaigns/${campaignId}`, "Readers, November", ".progress-bar"],
    ] as const) {
      await open(p, path, heading);
      await p.locator(shown).first().waitFor();
      await expectFitsViewport(p);
      await expectNoAxeViolations(p);
    }
    await phone.close();
  }, 60_000);

  it("shows a viewer no write controls, and the API refuses the viewer's writes", async () => {
    const viewer = await createMember(t, "viewer");
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const session = await browserSignIn(context, t, viewer);
    const p = await context.newPage();
    await open(p, "/templates", "Templates");
    await testMode(p);
    await p.getByRole("link", { name: "Readers' letter" }).waitFor();
    expect(await p.getByRole("link", { name: "New template" }).count()).toBe(0);
    await p.getByRole("link", { name: "Readers' letter" }).click();
    await p.getByRole("heading", { level: 1, name: "Readers' letter" }).waitFor();
    await p.getByText("Your role may read templates but not change them.").waitFor();
    expect(await p.getByRole("button", { name: "Save" }).count()).toBe(0);
    expect(await p.getByRole("button", { name: "Send a test to me" }).count()).toBe(0);
    expect(await p.getByLabel("Subject").isDisabled()).toBe(true);
    await expectNoAxeViolations(p);

    await open(p, "/campaigns", "Campaigns");
    await p.getByRole("link", { name: "Readers, November" }).waitFor();
    expect(await p.getByRole("link", { name: "New campaign" }).count()).toBe(0);
    await open(p, "/triggers", "Triggers");
    expect(await p.getByRole("link", { name: "New trigger" }).count()).toBe(0);
    await p.getByRole("row").filter({ hasText: "subscriber.created" }).getByRole("link").click();
    await p.getByRole("heading", { level: 1, name: "Trigger" }).waitFor();
    expect(await p.getByRole("button", { name: /Turn (on|off)/ }).count()).toBe(0);
    await expectNoAxeViolations(p);
    await context.close();

    const triggers = (await t.call("GET", "/api/v1/triggers")).body.items as Array<{ id: string }>;
    const refused = [
      await sessionCall(t, session, "PATCH", `/api/v1/triggers/${triggers[0]!.id}`, { mode: "test", body: { is_active: true } }),
      await sessionCall(t, session, "PATCH", `/api/v1/templates/${templateId}`, { mode: "test", body: { subject: "Changed" } }),
      await sessionCall(t, session, "POST", "/api/v1/campaigns", { mode: "test", body: { name: "x", template_id: templateId, tag_filter: {} } }),
      await sessionCall(t, session, "POST", `/api/v1/campaigns/${campaignId}/cancel`, { mode: "test" }),
      await sessionCall(t, session, "POST", "/api/v1/emails/send", { mode: "test", body: { template_slug: "readers-letter", to: viewer.email } }),
    ];
    expect(refused.map((r) => [r.status, r.body.code])).toEqual(Array(refused.length).fill([403, "role_forbidden"]));
    // Nothing changed.
    expect((await t.call("GET", `/api/v1/triggers/${triggers[0]!.id}`)).body.is_active).toBe(false);
    expect((await t.call("GET", `/api/v1/templates/${templateId}`)).body.subject).toBe("Letter for {{first_name}}");
    expect((await t.call("GET", "/api/v1/campaigns")).body.items).toHaveLength(1);
    // The admin's own session may (the refusal is the role's, not the session's).
    const adminSession = await signIn(t, admin);
    expect((await sessionCall(t, adminSession, "GET", `/api/v1/templates/${templateId}/versions`, { mode: "test" })).status).toBe(200);

    // The audit log has the admin's changes made on these pages, and none of the previews and counts they asked for while typing.
    const changes = ["createTemplate", "updateTemplate", "sendEmail", "createCampaign", "sendCampaign", "createTrigger", "updateTrigger"];
    const audited = await eventually(
      async () => ((await sessionCall(t, adminSession, "GET", "/api/v1/audit-log?limit=500")).body.items as Array<{ action: string; actor: { id: string } }>).filter((e) => e.actor.id === admin.memberId).map((e) => e.action),
      (actions) => changes.every((c) => actions.includes(c)),
    );
    expect(audited).toEqual(expect.arrayContaining(changes));
    expect(audited.filter((a) => ["previewTemplateDraft", "previewTemplate", "countRecipientsOfFilter"].includes(a))).toEqual([]);
  }, 60_000);

  it("deletes the trigger after a confirmation", async () => {
    await open(page, "/triggers", "Triggers");
    await page.getByRole("row").filter({ hasText: "subscriber.created" }).getByRole("link").click();
    await page.getByRole("heading", { level: 1, name: "Trigger" }).waitFor();
    const id = /\/triggers\/(trg_[0-9a-z]+)$/.exec(page.url())![1]!;
    await page.getByRole("button", { name: "Delete the trigger" }).click();
    const dialog = page.getByRole("dialog", { name: "Delete the trigger" });
    await dialog.getByRole("button", { name: "Delete the trigger" }).click();
    await page.getByRole("heading", { level: 1, name: "Triggers" }).waitFor();
    await page.getByText("No triggers yet.").waitFor();
    expect((await t.call("GET", `/api/v1/triggers/${id}`)).status).toBe(404);
  }, 60_000);
});

// Live mail over a real SMTP relay that refuses one recipient: the campaign's
// page lists that failure with the relay's reason, and the email's page says
// plainly that the body of mail sent live is not kept. Then a campaign
// scheduled in the member's time zone and cancelled, and one paused and
// resumed while it sends.
describe("live campaigns over a real SMTP relay", () => {
  let live: TestPlatform;
  let sink: SmtpSink;
  let key: string;
  let templateId: string;
  const to = (name: string) => `${name}-live@example.com`;
  beforeAll(async () => {
    sink = await new SmtpSink().start();
    // Two messages a second per account: a campaign of 16 lasts long enough (8 s) to pause it.
    live = await startTestPlatform("dashboard-content-live", { ...GENEROUS_RATE_LIMIT_ENV, EMAIL_PROVIDER: "smtp", SMTP_URL: sink.url(), CAMPAIGN_RATE: "2/1s" });
    key = (await live.call("POST", `/admin/v1/accounts/${live.accountId}/api-keys`, { admin: true, body: { mode: "live" } })).body.key as string;
    const template = await live.call("POST", "/api/v1/templates", { key, body: { name: "Live letter", subject: "Live", category: "marketing", mjml_content: FIXED_MJML } });
    templateId = template.body.id;
    expect((await live.call("POST", "/api/v1/tags", { key, body: { name: "readers" } })).status).toBe(201);
    for (const name of ["eve", "fay", "gus"]) expect((await live.call("POST", "/api/v1/subscribers", { key, body: { email: to(name), tags: ["readers"] } })).status).toBe(201);
    sink.rcptReplies.set(to("gus"), { code: 550, text: `5.1.1 <${to("gus")}>: User unknown` });
    const campaign = await live.call("POST", "/api/v1/campaigns", { key, body: { name: "Live readers", template_id: template.body.id, tag_filter: { include_tags: ["readers"] } } });
    expect((await live.call("POST", `/api/v1/campaigns/${campaign.body.id}/send`, { key })).status).toBe(200);
  }, 60_000);
  afterAll(async () => {
    await live?.close();
    await sink?.close();
  });

  it("shows the failed email with the relay's reason on the campaign's page, and says the live body is not kept", async () => {
    const member = await createMember(live, "admin");
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await browserSignIn(context, live, member);
    const p = await context.newPage();
    await p.goto(`${live.url}/dashboard/campaigns`);
    await p.getByRole("link", { name: "Live readers" }).click();
    await p.getByRole("heading", { level: 1, name: "Live readers" }).waitFor();
    const failures = p.getByRole("region", { name: "Failed emails" });
    const row = failures.getByRole("row").filter({ hasText: to("gus") });
    await row.waitFor({ timeout: 45_000 });
    expect(await row.textContent()).toContain("recipient_rejected: 550 5.1.1 <recipient>: User unknown");
    const counts = await eventually(() => shownCounts(p), (c) => c.sent === 2 && c.failed === 1);
    expect(counts).toEqual({ pending: 0, queued: 0, sent: 2, failed: 1, skipped: 0, total: 3 });
    await expectNoAxeViolations(p);

    await row.getByRole("link").click();
    await p.getByRole("heading", { level: 1, name: "Email" }).waitFor();
    await p.getByText("Sent through smtp: the platform does not keep the body of mail it sent.").waitFor();
    await p.getByText("recipient_rejected: 550 5.1.1 <recipient>: User unknown").first().waitFor();
    await expectNoAxeViolations(p);
    await context.close();
  }, 60_000);

  it("schedules a campaign at a time of the member's zone (sent as RFC 3339), then cancels it after a confirmation", async () => {
    const member = await createMember(live, "admin");
    // Tokyo has no daylight saving time: 09:30 there is 00:30 UTC the same day, whatever the date.
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, timezoneId: "Asia/Tokyo" });
    const session = await browserSignIn(context, live, member);
    const p = await context.newPage();
    await p.goto(`${live.url}/dashboard/campaigns/new`);
    await p.getByRole("heading", { level: 1, name: "New campaign" }).waitFor();
    await p.getByLabel("Name").fill("Later");
    // Every active subscriber: gus bounced in the campaign before, so two.
    await p.getByText("2 recipients now").waitFor();
    await p.getByRole("radio", { name: "At a time" }).check();
    await p.getByText("In your time zone, Asia/Tokyo.").waitFor();
    const day = new Date(Date.now() + 10 * 86_400_000).toISOString().slice(0, 10);
    await p.getByLabel("Send at").fill(`${day}T09:30`);
    await expectNoAxeViolations(p);
    await p.getByRole("button", { name: "Schedule", exact: true }).click();
    const dialog = p.getByRole("dialog", { name: "Schedule the campaign?" });
    await dialog.getByRole("button", { name: "Schedule" }).click();
    await p.waitForURL(/\/campaigns\/cmp_[0-9a-z]+$/);
    const id = /\/campaigns\/(cmp_[0-9a-z]+)$/.exec(p.url())![1]!;
    await p.locator("dd .badge").filter({ hasText: "Scheduled" }).waitFor();
    const scheduled = (await sessionCall(live, session, "GET", `/api/v1/campaigns/${id}`)).body;
    expect(scheduled.status).toBe("scheduled");
    expect(Date.parse(scheduled.send_at)).toBe(Date.parse(`${day}T00:30:00Z`));

    await p.getByRole("button", { name: "Cancel the campaign" }).click();
    const confirm = p.getByRole("dialog", { name: "Cancel the campaign" });
    await confirm.getByText("This cannot be undone.").waitFor();
    await expectNoAxeViolations(p);
    await confirm.getByRole("button", { name: "Cancel the campaign" }).click();
    await p.locator("dd .badge").filter({ hasText: "Cancelled" }).waitFor();
    expect((await sessionCall(live, session, "GET", `/api/v1/campaigns/${id}`)).body.status).toBe("cancelled");
    await context.close();
  }, 60_000);

  it("pauses a sending campaign and resumes it: the counts add up while it waits, and it finishes", async () => {
    expect((await live.call("POST", "/api/v1/tags", { key, body: { name: "many" } })).status).toBe(201);
    for (let i = 0; i < 16; i++) expect((await live.call("POST", "/api/v1/subscribers", { key, body: { email: to(`many${i}`), tags: ["many"] } })).status).toBe(201);
    const campaign = await live.call("POST", "/api/v1/campaigns", { key, body: { name: "Slow one", template_id: templateId, tag_filter: { include_tags: ["many"] } } });
    expect((await live.call("POST", `/api/v1/campaigns/${campaign.body.id}/send`, { key })).status).toBe(200);

    const member = await createMember(live, "admin");
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await browserSignIn(context, live, member);
    const p = await context.newPage();
    await p.goto(`${live.url}/dashboard/campaigns/${campaign.body.id}`);
    await p.getByRole("heading", { level: 1, name: "Slow one" }).waitFor();
    await p.getByRole("button", { name: "Pause" }).click();
    await p.locator("dd .badge").filter({ hasText: "Paused" }).waitFor();
    await p.getByRole("button", { name: "Resume" }).waitFor();
    // Paused: what was queued finishes, the rest waits; the parts add up to the total at every read.
    const paused = await eventually(() => shownCounts(p), (c) => c.queued === 0);
    expect(paused.pending! + paused.queued! + paused.sent! + paused.failed! + paused.skipped!).toBe(16);
    expect(paused.total).toBe(16);
    expect(paused.pending).toBeGreaterThan(0);
    await expectNoAxeViolations(p);

    await p.getByRole("button", { name: "Resume" }).click();
    await p.locator("dd .badge").filter({ hasText: "Sending" }).or(p.locator("dd .badge").filter({ hasText: "Sent" })).first().waitFor();
    const done = await eventually(async () => ({ status: await p.locator("dd .badge").first().textContent(), counts: await shownCounts(p) }), (s) => s.status === "Sent", 600);
    expect(done.counts).toEqual({ pending: 0, queued: 0, sent: 16, failed: 0, skipped: 0, total: 16 });
    await context.close();
  }, 60_000);
});
