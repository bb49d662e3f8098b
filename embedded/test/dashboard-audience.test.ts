import { readFileSync } from "node:fs";
import { expectFitsViewport, expectNoAxeViolations, launchChromium, tabUntilFocused } from "@emailsvc/testing";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { browserSignIn, createMember, sessionCall, signIn, type DashboardSession, type MemberCredentials, type Role } from "./support/dashboard-session";
import { eventually, startTestPlatform, type TestPlatform } from "./support/platform-client";

// The dashboard's Subscribers and Tags pages, clicked through in headless
// Chromium as a new customer would, against the real platform (embedded
// store): a public tag with a German name; 1,000 subscribers imported from a
// CSV through the import page (its preview, its progress to done, the bad
// rows in its report); one found by address, the list filtered by tag, its
// metadata edited, then erased with the typed address and gone. Every page
// and state is checked with axe (WCAG 2.1 AA); the list fits a 360 px
// phone; a search is done with the keyboard alone; the German catalogue is
// shown; a viewer sees no write control and the API refuses its writes.

const GOOD_ROWS = 1000;

/** The import file: a header, 1,000 good rows, two bad addresses and a repeated one. */
function importCsv(): string {
  const lines = ["Email,Tags,First Name,City"];
  for (let i = 0; i < GOOD_ROWS; i++) {
    const n = String(i).padStart(4, "0");
    // Every tenth is a VIP; a quoted field with a comma checks the preview's parser.
    lines.push(`user${n}@example.com,${i % 10 === 0 ? "Weekly news;vip" : "Weekly news"},Person ${n},"Zürich, ZH"`);
  }
  lines.push("not-an-address,vip,Bad,Nowhere");
  lines.push("also bad@example.com,,Bad,Nowhere");
  lines.push("user0001@example.com,,Again,Twice");
  return lines.join("\n") + "\n";
}

/** A member of the test account, and their session for API calls (made once, through the API). */
interface Member {
  creds: MemberCredentials;
  session: DashboardSession;
}
const signedIn = {
  async member(t: TestPlatform, role: Role): Promise<Member> {
    const creds = await createMember(t, role);
    return { creds, session: await signIn(t, creds) };
  },
  /** The member's session cookie in a browser context, as the sign-in form leaves it. */
  async context(context: BrowserContext, t: TestPlatform, member: Member): Promise<void> {
    await browserSignIn(context, t, member.creds);
  },
  /** A call with the member's session (live mode, as the dashboard's default), checked against the document. */
  async call(t: TestPlatform, member: Member, method: string, path: string, body?: unknown) {
    return sessionCall(t, member.session, method, path, body === undefined ? {} : { body });
  },
};

let browser: Browser;
let t: TestPlatform;
let admin: Member;
let desk: BrowserContext;
let page: Page;

const url = (path: string) => `${t.url}/dashboard${path}`;

beforeAll(async () => {
  t = await startTestPlatform("dashboard-audience");
  browser = await launchChromium();
  admin = await signedIn.member(t, "admin");
  desk = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  await signedIn.context(desk, t, admin);
  page = await desk.newPage();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await t?.close();
});

describe("the Tags page", () => {
  it("shows its empty state, then creates a public tag with a German translation, listed with its member count", async () => {
    await page.goto(url("/tags"));
    await page.getByText("No tags yet.").waitFor();
    await expectNoAxeViolations(page);

    await page.getByRole("link", { name: "New tag" }).first().click();
    await page.getByRole("heading", { level: 1, name: "New tag" }).waitFor();
    await page.getByLabel("Name", { exact: true }).fill("Weekly news");
    await page.getByLabel("Description", { exact: true }).fill("Every Friday");
    await page.getByLabel(/^Public/).check();
    await page.getByLabel("Name in German").fill("Wöchentliche Neuigkeiten");
    await page.getByLabel("Description in German").fill("Jeden Freitag");
    await expectNoAxeViolations(page);
    await page.getByRole("button", { name: "Create tag" }).click();

    await page.getByRole("heading", { level: 1, name: "Tags" }).waitFor();
    const row = page.getByRole("row", { name: /Weekly news/ });
    await row.getByText("Public").waitFor();
    await row.getByRole("cell", { name: "de", exact: true }).waitFor();
    await row.getByRole("link", { name: "0 subscribers with Weekly news" }).waitFor();
    await expectNoAxeViolations(page);

    const tags = (await signedIn.call(t, admin, "GET", "/api/v1/tags")).body.items;
    expect(tags).toEqual([
      expect.objectContaining({
        name: "Weekly news",
        description: "Every Friday",
        is_public: true,
        translations: { de: { name: "Wöchentliche Neuigkeiten", description: "Jeden Freitag" } },
        subscriber_count: 0,
      }),
    ]);
  });

  it("edits a tag and deletes another after a question", async () => {
    await page.goto(url("/tags"));
    await page.getByRole("link", { name: "Weekly news", exact: true }).click();
    await page.getByRole("heading", { level: 1, name: "Weekly news" }).waitFor();
    expect(await page.getByLabel("Name in German").inputValue()).toBe("Wöchentliche Neuigkeiten");
    await page.getByLabel("Name in French").fill("Nouvelles de la semaine");
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByText("Tag Weekly news saved.").waitFor();
    await expectNoAxeViolations(page);
    const saved = (await signedIn.call(t, admin, "GET", "/api/v1/tags")).body.items[0];
    expect(saved.translations).toEqual({ de: { name: "Wöchentliche Neuigkeiten", description: "Jeden Freitag" }, fr: { name: "Nouvelles de la semaine", description: "" } });

    expect((await signedIn.call(t, admin, "POST", "/api/v1/tags", { name: "short-lived" })).status).toBe(201);
    await page.goto(url("/tags"));
    await page.getByRole("button", { name: "Delete short-lived" }).click();
    const dialog = page.getByRole("dialog", { name: "Delete this tag?" });
    await dialog.getByText("The tag short-lived is removed from its 0 subscribers").waitFor();
    await expectNoAxeViolations(page);
    await dialog.getByRole("button", { name: "Delete" }).click();
    await page.getByRole("link", { name: "short-lived", exact: true }).waitFor({ state: "detached" });
    expect(((await signedIn.call(t, admin, "GET", "/api/v1/tags")).body.items as Array<{ name: string }>).map((x) => x.name)).toEqual(["Weekly news"]);
  });

  it("shows a tag that does not exist as not found", async () => {
    await page.goto(url("/tags/tag_00000000000000000000000000"));
    await page.getByRole("alert").getByText("Not found").waitFor();
    await expectNoAxeViolations(page);
  });
});

describe("the Subscribers pages", () => {
  it("shows the empty list, imports 1,000 subscribers from a CSV with a preview, its progress to done and the bad rows reported", async () => {
    await page.goto(url("/subscribers"));
    await page.getByText("No subscribers yet.").waitFor();
    await expectNoAxeViolations(page);

    await page.getByRole("link", { name: "Import CSV" }).first().click();
    await page.getByRole("heading", { level: 1, name: "Import subscribers" }).waitFor();
    await page.getByText("No imports yet.").waitFor();
    await expectNoAxeViolations(page);

    await page.getByLabel("CSV file", { exact: true }).setInputFiles({ name: "people.csv", mimeType: "text/csv", buffer: Buffer.from(importCsv()) });
    // The preview: the columns and the first rows, the quoted comma read as one field.
    const preview = page.getByRole("region", { name: "Preview" });
    await preview.getByRole("columnheader", { name: "First Name" }).waitFor();
    await preview.getByRole("cell", { name: "user0000@example.com" }).waitFor();
    await preview.getByRole("cell", { name: "Zürich, ZH" }).first().waitFor();
    expect(await preview.getByRole("row").count()).toBe(11);
    // The mapping guessed from the headers.
    expect(await page.getByLabel("Email address column").inputValue()).toBe("Email");
    expect(await page.getByLabel(/^Tags column/).inputValue()).toBe("Tags");
    expect(await page.getByLabel("Import First Name as metadata").isChecked()).toBe(true);
    expect(await page.getByLabel("Metadata key for First Name").inputValue()).toBe("first_name");
    await expectNoAxeViolations(page);

    await page.getByRole("button", { name: "Start the import" }).click();
    await page.waitForURL(/\/subscribers\/import\?job=imp_/);
    const progress = page.getByRole("region", { name: "Import progress" });
    await progress.getByText("Completed").waitFor({ timeout: 50_000 });
    const facts = async () => (await progress.locator("dl.facts").innerText()).replace(/\s+/g, " ");
    expect(await facts()).toContain("Rows read 1,003");
    expect(await facts()).toContain("Created 1,000");
    expect(await facts()).toContain("Skipped 1");
    expect(await facts()).toContain("Failed 2");
    // The report: the rows by number and reason, never their values.
    const report = page.getByRole("region", { name: "Report of skipped and failed rows" });
    await report.getByRole("row", { name: /1001 email invalid_email/ }).waitFor();
    await report.getByRole("row", { name: /1002 email invalid_email/ }).waitFor();
    await report.getByRole("row", { name: /1003 .*duplicate_in_file/ }).waitFor();
    await page.getByRole("region", { name: "Past imports" }).getByText("Completed").waitFor();
    await expectNoAxeViolations(page);

    const tags = (await signedIn.call(t, admin, "GET", "/api/v1/tags")).body.items as Array<{ name: string; subscriber_count: number }>;
    expect(Object.fromEntries(tags.map((x) => [x.name, x.subscriber_count]))).toEqual({ "Weekly news": 1000, vip: 100 });
  }, 90_000);

  it("finds a subscriber by address, filters by tag, edits its metadata and erases it with the typed address", async () => {
    await page.goto(url("/subscribers"));
    await page.getByLabel("Email address starts with").fill("USER0042");
    await page.getByRole("button", { name: "Search" }).click();
    await page.waitForURL(/email=USER0042/);
    const list = page.getByRole("region", { name: "Subscribers" });
    await list.getByRole("link", { name: "user0042@example.com" }).waitFor();
    expect(await list.getByRole("row").count()).toBe(2);

    // The tag filter, kept in the query with the search cleared.
    await page.getByRole("button", { name: "Clear filters" }).click();
    await page.getByLabel("Tag", { exact: true }).selectOption("vip");
    await page.waitForURL(/tag=vip/);
    await list.getByRole("link", { name: "user0000@example.com" }).waitFor();
    const shown = await list.getByRole("link").allInnerTexts();
    expect(shown).toHaveLength(50);
    expect(shown.every((email) => /^user\d\d\d0@example\.com$/.test(email))).toBe(true);
    await page.getByRole("button", { name: "Load more" }).click();
    await eventually(() => list.getByRole("link").count(), (n) => n === 100);
    await expect(page.getByRole("button", { name: "Load more" }).count()).resolves.toBe(0);
    await expectNoAxeViolations(page);

    // The export: a CSV of the filter's every subscriber, paged through the API in the browser.
    const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Export CSV" }).click()]);
    expect(download.suggestedFilename()).toMatch(/^subscribers-\d{4}-\d{2}-\d{2}\.csv$/);
    const exported = readFileSync(await download.path(), "utf8").trimEnd().split("\r\n");
    expect(exported[0]).toBe("email,status,locale,tags,created_at,city,first_name");
    expect(exported).toHaveLength(101);
    expect(exported[1]).toMatch(/^user0000@example\.com,active,,vip;Weekly news,\d{4}-[^,]+,"Zürich, ZH",Person 0000$/);

    // Open it.
    await page.goto(url("/subscribers?email=user0042"));
    await list.getByRole("link", { name: "user0042@example.com" }).click();
    await page.getByRole("heading", { level: 1, name: "user0042@example.com" }).waitFor();
    const subscriberUrl = page.url();
    const id = /\/subscribers\/(sub_[0-9a-z]+)/.exec(subscriberUrl)![1]!;
    await page.getByText("Active", { exact: true }).first().waitFor();
    const metadata = page.getByRole("group", { name: "Metadata" });
    expect([await metadata.getByLabel("Key 1").inputValue(), await metadata.getByLabel("Key 2").inputValue()].sort()).toEqual(["city", "first_name"]);
    await expectNoAxeViolations(page);

    // Edit its metadata: change one value, add a field, remove one.
    const values: Record<string, string> = {};
    for (let i = 1; i <= 2; i++) values[await metadata.getByLabel(`Key ${i}`).inputValue()] = `Value ${i}`;
    const cityIndex = Object.keys(values).indexOf("city") + 1;
    const nameIndex = Object.keys(values).indexOf("first_name") + 1;
    await metadata.getByLabel(`Value ${cityIndex}`).fill("Basel");
    await metadata.getByRole("button", { name: "Add a field" }).click();
    await metadata.getByLabel("Key 3").fill("plan");
    await metadata.getByLabel("Value 3").fill("42");
    await metadata.getByRole("button", { name: `Remove field ${nameIndex}` }).click();
    await page.getByRole("button", { name: "Save metadata" }).click();
    await page.getByText("Saved.").waitFor();
    expect((await signedIn.call(t, admin, "GET", `/api/v1/subscribers/${id}`)).body.metadata).toEqual({ city: "Basel", plan: 42 });
    // The change is in its audit trail (read again after the save; the record is written by the outbox right after the change).
    const trail = page.getByRole("region", { name: "Audit trail" });
    for (let attempt = 0; (await trail.getByText("subscriber.updated").count()) === 0; attempt++) {
      if (attempt === 20) throw new Error(`no subscriber.updated in the audit trail: ${await trail.innerText()}`);
      await page.reload();
      await trail.getByText("subscriber.created").waitFor();
    }

    // Its data export (GDPR) as a JSON file.
    const [dataFile] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Export data (JSON)" }).click()]);
    expect(dataFile.suggestedFilename()).toBe(`subscriber-${id}.json`);
    const data = JSON.parse(readFileSync(await dataFile.path(), "utf8"));
    expect(data.profile).toMatchObject({ id, email: "user0042@example.com", metadata: { city: "Basel", plan: 42 } });

    // Erase: the button stays disabled until the address is typed.
    await page.getByRole("button", { name: "Erase" }).click();
    const dialog = page.getByRole("dialog", { name: "Erase this subscriber?" });
    const confirm = dialog.getByRole("button", { name: "Erase" });
    expect(await confirm.isDisabled()).toBe(true);
    await expectNoAxeViolations(page);
    await dialog.getByLabel(/^Type .* to confirm/).fill("user0042@example.co");
    expect(await confirm.isDisabled()).toBe(true);
    await dialog.getByLabel(/^Type .* to confirm/).fill("user0042@example.com");
    await confirm.click();
    await page.getByRole("alert").getByText("Not found").waitFor();
    await expectNoAxeViolations(page);
    expect((await signedIn.call(t, admin, "GET", `/api/v1/subscribers/${id}`)).status).toBe(404);

    // Gone from the list too.
    await page.goto(url("/subscribers?email=user0042"));
    await page.getByText("No subscriber matches these filters.").waitFor();
    await expectNoAxeViolations(page);
  }, 90_000);

  it("adds a subscriber with tags, metadata rows and a language through the form", async () => {
    await page.goto(url("/subscribers/new"));
    await page.getByRole("heading", { level: 1, name: "Add a subscriber" }).waitFor();
    await page.getByLabel("Email address", { exact: true }).fill("new.person@example.com");
    await page.getByLabel("Tags", { exact: true }).fill("vip, Weekly news");
    await page.getByRole("main").getByLabel("Language").selectOption("de");
    await page.getByRole("button", { name: "Add a field" }).click();
    await page.getByLabel("Key 1").fill("source");
    await page.getByLabel("Value 1").fill("fair");
    await expectNoAxeViolations(page);
    await page.getByRole("button", { name: "Add subscriber" }).click();
    await page.getByRole("heading", { level: 1, name: "new.person@example.com" }).waitFor();
    const found = (await signedIn.call(t, admin, "GET", "/api/v1/subscribers/by-email/new.person@example.com")).body;
    expect(found).toMatchObject({ status: "active", locale: "de", tags: ["vip", "Weekly news"], metadata: { source: "fair" } });

    // The profile form shows what is stored.
    const profile = page.getByRole("region", { name: "Profile" });
    expect(await profile.getByLabel("Language").inputValue()).toBe("de");
    expect(await profile.getByLabel("Email address").inputValue()).toBe("new.person@example.com");
    await profile.getByLabel("Language").selectOption("fr");
    await profile.getByRole("button", { name: "Save" }).click();
    await profile.getByRole("definition").filter({ hasText: "French" }).waitFor();
    expect((await signedIn.call(t, admin, "GET", `/api/v1/subscribers/${found.id}`)).body).toMatchObject({ locale: "fr", email: "new.person@example.com" });

    // Its tags: one added, one removed.
    const tags = page.getByRole("region", { name: "Tags" });
    await tags.getByLabel("Add tags").fill("fair-2026");
    await tags.getByRole("button", { name: "Add", exact: true }).click();
    await tags.getByRole("link", { name: "fair-2026" }).waitFor();
    await tags.getByRole("button", { name: "Remove tag vip" }).click();
    await tags.getByRole("link", { name: "vip" }).waitFor({ state: "detached" });
    expect((await signedIn.call(t, admin, "GET", `/api/v1/subscribers/${found.id}`)).body.tags).toEqual(["fair-2026", "Weekly news"]);

    // Unsubscribe from everything, after a question.
    await page.getByRole("button", { name: "Unsubscribe" }).click();
    await page.getByRole("dialog", { name: "Unsubscribe from everything?" }).getByRole("button", { name: "Unsubscribe" }).click();
    await page.getByRole("region", { name: "Profile" }).getByText("Unsubscribed", { exact: true }).waitFor();
    expect((await signedIn.call(t, admin, "GET", `/api/v1/subscribers/${found.id}`)).body.status).toBe("unsubscribed");
    await expectNoAxeViolations(page);

    // A bad address is refused beside its field, and nothing is made.
    await page.goto(url("/subscribers/new"));
    await page.getByLabel("Email address", { exact: true }).fill("nobody@");
    await page.getByRole("button", { name: "Add subscriber" }).click();
    await page.getByRole("alert").waitFor();
    await expectNoAxeViolations(page);
  });

  it("shows a subscriber that does not exist as not found", async () => {
    await page.goto(url("/subscribers/sub_00000000000000000000000000"));
    await page.getByRole("alert").getByText("Not found").waitFor();
    await expectNoAxeViolations(page);
  });

  it("searches with the keyboard alone", async () => {
    await page.goto(url("/subscribers"));
    await page.getByRole("heading", { level: 1, name: "Subscribers" }).waitFor();
    await tabUntilFocused(page, page.getByLabel("Email address starts with"), 40);
    await page.keyboard.type("user0007");
    await page.keyboard.press("Enter");
    await page.getByRole("region", { name: "Subscribers" }).getByRole("link", { name: "user0007@example.com" }).waitFor();
    // user0007 is on the unfiltered first page too: wait for the search's answer to replace that page's rows.
    // The old rows go first, while the search loads (no rows at all), then the answer's header and one row come.
    const rows = page.getByRole("region", { name: "Subscribers" }).getByRole("row");
    await rows.nth(2).waitFor({ state: "detached" });
    await rows.nth(1).getByRole("link", { name: "user0007@example.com" }).waitFor();
    expect(await rows.count()).toBe(2);
  });

  it("reads in German", async () => {
    await page.goto(url("/tags"));
    await page.getByRole("banner").getByLabel("Language").selectOption("de");
    await page.getByRole("heading", { level: 1, name: "Tags" }).waitFor();
    await page.getByRole("link", { name: "Neuer Tag" }).waitFor();
    await page.getByRole("columnheader", { name: "Sichtbarkeit" }).waitFor();
    await page.getByText("Öffentlich", { exact: true }).waitFor();
    await expectNoAxeViolations(page);
    await page.goto(url("/subscribers"));
    await page.getByRole("heading", { level: 1, name: "Abonnenten" }).waitFor();
    await page.getByLabel("E-Mail-Adresse beginnt mit").waitFor();
    await expectNoAxeViolations(page);
    await page.getByRole("banner").getByLabel("Sprache").selectOption("en");
    await page.getByRole("heading", { level: 1, name: "Subscribers" }).waitFor();
  });
});

describe("on a 360 px phone", () => {
  it("the subscriber and tag lists fit the screen", async () => {
    const phone = await browser.newContext({ viewport: { width: 360, height: 740 }, isMobile: true, hasTouch: true });
    try {
      await signedIn.context(phone, t, admin);
      const small = await phone.newPage();
      await small.goto(url("/subscribers"));
      await small.getByRole("link", { name: "user0000@example.com" }).waitFor();
      await expectFitsViewport(small);
      await expectNoAxeViolations(small);
      await small.goto(url("/tags"));
      await small.getByRole("link", { name: "Weekly news", exact: true }).waitFor();
      await expectFitsViewport(small);
      await small.goto(url("/subscribers/import"));
      await small.getByRole("region", { name: "Past imports" }).getByText("Completed").waitFor();
      await expectFitsViewport(small);
    } finally {
      await phone.close();
    }
  });
});

describe("a viewer", () => {
  it("sees no write control, and the API refuses its writes", async () => {
    const viewer = await signedIn.member(t, "viewer");
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    try {
      await signedIn.context(context, t, viewer);
      const look = await context.newPage();
      await look.goto(url("/subscribers"));
      await look.getByRole("link", { name: "user0000@example.com" }).waitFor();
      expect(await look.getByRole("link", { name: "Add subscriber" }).count()).toBe(0);
      expect(await look.getByRole("link", { name: "Import CSV" }).count()).toBe(0);
      await look.getByRole("link", { name: "user0000@example.com" }).click();
      await look.getByRole("heading", { level: 1, name: "user0000@example.com" }).waitFor();
      await look.getByRole("button", { name: "Export data (JSON)" }).waitFor();
      expect(await look.getByRole("button", { name: "Erase" }).count()).toBe(0);
      expect(await look.getByRole("button", { name: "Unsubscribe" }).count()).toBe(0);
      expect(await look.getByRole("button", { name: "Save metadata" }).count()).toBe(0);
      expect(await look.getByRole("button", { name: /^Remove tag/ }).count()).toBe(0);
      await expectNoAxeViolations(look);
      await look.goto(url("/tags"));
      await look.getByRole("link", { name: "Weekly news", exact: true }).waitFor();
      expect(await look.getByRole("link", { name: "New tag" }).count()).toBe(0);
      expect(await look.getByRole("button", { name: /^Delete/ }).count()).toBe(0);

      const id = (await signedIn.call(t, admin, "GET", "/api/v1/subscribers/by-email/user0000@example.com")).body.id as string;
      const tagId = ((await signedIn.call(t, admin, "GET", "/api/v1/tags")).body.items as Array<{ id: string }>)[0]!.id;
      for (const [method, path, body] of [
        ["DELETE", `/api/v1/subscribers/${id}`, undefined],
        ["PATCH", `/api/v1/subscribers/${id}`, { metadata: { x: 1 } }],
        ["POST", "/api/v1/subscribers", { email: "viewer-made@example.com" }],
        ["POST", "/api/v1/tags", { name: "viewer-tag" }],
        ["DELETE", `/api/v1/tags/${tagId}`, undefined],
      ] as const) {
        const res = await signedIn.call(t, viewer, method, path, body);
        expect([method, path, res.status]).toEqual([method, path, 403]);
      }
      expect((await signedIn.call(t, admin, "GET", `/api/v1/subscribers/${id}`)).body.metadata).not.toHaveProperty("x");
    } finally {
      await context.close();
    }
  });
});

// The list's address and tag filters and the tags' counts are store queries
// (a range on the lower-cased address, a tag's members counted): the same
// pages on MongoDB (FerretDB here).
describe("on MongoDB", () => {
  let tm: TestPlatform;
  let owner: Member;
  beforeAll(async () => {
    tm = await startTestPlatform("dashboard-audience-mongo", undefined, { mongo: true });
    owner = await signedIn.member(tm, "owner");
  }, 60_000);
  afterAll(async () => {
    await tm?.close();
  });

  it("finds by address prefix and tag, and counts a tag's members", async () => {
    for (const [email, tags] of [
      ["Anna@example.com", ["vip"]],
      ["annika@example.com", []],
      ["bob@example.com", ["vip"]],
    ] as const) {
      expect((await signedIn.call(tm, owner, "POST", "/api/v1/subscribers", { email, tags })).status).toBe(201);
    }
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    try {
      await signedIn.context(context, tm, owner);
      const mongoPage = await context.newPage();
      const list = mongoPage.getByRole("region", { name: "Subscribers" });
      await mongoPage.goto(`${tm.url}/dashboard/subscribers?email=ANN`);
      await list.getByRole("link", { name: "annika@example.com" }).waitFor();
      expect(await list.getByRole("link").allInnerTexts()).toEqual(["Anna@example.com", "annika@example.com"]);
      await mongoPage.goto(`${tm.url}/dashboard/subscribers?tag=VIP`);
      await list.getByRole("link", { name: "bob@example.com" }).waitFor();
      expect(await list.getByRole("link").allInnerTexts()).toEqual(["Anna@example.com", "bob@example.com"]);
      await mongoPage.goto(`${tm.url}/dashboard/tags`);
      await mongoPage.getByRole("link", { name: "2 subscribers with vip" }).waitFor();
      await expectNoAxeViolations(mongoPage);
    } finally {
      await context.close();
    }
  });
});
