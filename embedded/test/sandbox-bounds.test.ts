import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { GENEROUS_RATE_LIMIT_ENV } from "../../services/gateway/test/support/harness";
import { allItems, eventually, startTestPlatform, type TestPlatform } from "./support/platform-client";

// Issue 16, defect 2, through the REST API of `npm start`'s platform (embedded
// store, sandbox): sandboxed messages were kept for ever, each a document the
// embedded store held in memory (one test-key campaign to 50,000 took the
// process from 1.2 to 2.3 GB, linearly per repeat, for every tenant), and test
// keys were a free, unlimited workload.
//  - The sandbox keeps at most SANDBOX_MAX_MESSAGES_PER_TENANT per account and
//    mode (those kept longest ago go first), as small rows: the store's datafile, which
//    mirrors what it holds in memory, has no bodies and no more rows than
//    that; the bodies are files under DATA_DIR/sandbox. A message no longer
//    kept is a 404 `sandbox_message_expired`.
//  - Test mode sends at most TEST_MODE_DAILY_LIMIT messages a day per account:
//    transactional sends and campaigns beyond it are a 429
//    `test_mode_quota_exceeded` with Retry-After, and send nothing.

const CAP = 5;
const DAILY = 30;
const RECEIPT = "<mjml><mj-body><mj-section><mj-column><mj-text>Receipt {{n}}: thank you for your order.</mj-text></mj-column></mj-section></mj-body></mjml>";

interface EmailJson {
  id: string;
  to: string | null;
  status: string;
}

/** The live documents of an embedded-store datafile (later lines win; `$$deleted` removes). */
function liveDocs(file: string): Array<Record<string, unknown>> {
  const docs = new Map<string, Record<string, unknown>>();
  for (const line of readFileSync(file, "utf8").split("\n")) {
    if (line.trim() === "") continue;
    const doc = JSON.parse(line) as Record<string, unknown>;
    if (typeof doc._id !== "string") continue; // an index line
    if (doc.$$deleted === true) docs.delete(doc._id);
    else docs.set(doc._id, doc);
  }
  return [...docs.values()];
}

describe("the sandbox's bounds and the test-mode quota (embedded platform, REST)", () => {
  let t: TestPlatform;
  beforeAll(async () => {
    t = await startTestPlatform("sandbox-bounds", { ...GENEROUS_RATE_LIMIT_ENV, SANDBOX_MAX_MESSAGES_PER_TENANT: String(CAP), TEST_MODE_DAILY_LIMIT: String(DAILY) });
  }, 60_000);
  afterAll(() => t?.close());

  /** A test key (or a live one) of a new account, with the receipt template. */
  async function account(name: string, mode: "test" | "live" = "test"): Promise<{ id: string; key: string }> {
    const created = await t.call("POST", "/admin/v1/accounts", { admin: true, body: { name } });
    const key = (await t.call("POST", `/admin/v1/accounts/${created.body.id}/api-keys`, { admin: true, body: { mode } })).body.key as string;
    const template = await t.call("POST", "/api/v1/templates", { key, body: { name: "Receipt", subject: "Receipt {{n}}", category: "transactional", mjml_content: RECEIPT } });
    expect(template.status).toBe(201);
    return { id: created.body.id as string, key };
  }

  const send = (key: string, to: string, n: number) => t.call("POST", "/api/v1/emails/send", { key, body: { template_slug: "receipt", to, variables: { n: String(n) } } });

  it("keeps at most SANDBOX_MAX_MESSAGES_PER_TENANT messages of a test key, as small rows with the bodies in files; older ones answer sandbox_message_expired", async () => {
    const { id: accountId, key } = await account("Sandboxed");
    const ids: string[] = [];
    // One after another, each kept before the next: the cap drops those kept longest ago.
    for (let n = 0; n < 25; n += 1) {
      const sent = await send(key, `buyer-${n}@example.com`, n);
      expect(sent.status).toBe(202);
      ids.push(sent.body.id as string);
      const done = await eventually(async () => (await t.call("GET", `/api/v1/emails/${sent.body.id}`, { key })).body as EmailJson, (e) => e.status === "sent", 600);
      expect(done.status).toBe("sent");
    }

    // The newest is there, whole.
    const newest = await t.call("GET", `/api/v1/emails/${ids[24]}/sandbox`, { key });
    expect(newest.status).toBe(200);
    expect(newest.body).toMatchObject({ subject: "Receipt 24", to: "buyer-24@example.com" });
    expect(newest.body.html).toContain("thank you for your order");
    // The oldest is no longer kept, and says so.
    const oldest = await t.call("GET", `/api/v1/emails/${ids[0]}/sandbox`, { key });
    expect(oldest.status).toBe(404);
    expect(oldest.body.code).toBe("sandbox_message_expired");

    // What the embedded store holds (its datafile mirrors its memory): at most the cap, no bodies.
    const rows = liveDocs(join(t.dataDir, "delivery", "sandbox_messages.db")).filter((doc) => doc.tenant === `${accountId}:test`);
    expect(rows.length).toBeLessThanOrEqual(CAP);
    expect(rows.map((row) => row._id)).toContain(ids[24]);
    for (const row of rows) {
      expect(Object.keys(row).sort()).toEqual(["_id", "captured_at", "from", "subject", "tenant", "to"]);
    }
    // The bodies are files, as many as the rows.
    const bodies = join(t.dataDir, "sandbox", accountId, "test");
    expect(existsSync(bodies)).toBe(true);
    expect(readdirSync(bodies).sort()).toEqual(rows.map((row) => `${row._id as string}.json`).sort());
  });

  it("refuses test-mode sends and campaigns past TEST_MODE_DAILY_LIMIT with 429 test_mode_quota_exceeded and Retry-After, sending nothing; live keys are not counted", async () => {
    const { id: accountId, key } = await account("Quota");
    expect((await t.call("POST", "/api/v1/tags", { key, body: { name: "all" } })).status).toBe(201);
    for (let i = 0; i < 10; i += 1) {
      expect((await t.call("POST", "/api/v1/subscribers", { key, body: { email: `reader-${i}@example.com`, tags: ["all"] } })).status).toBe(201);
    }
    const templateId = (await t.call("GET", "/api/v1/templates", { key })).body.items[0].id as string;
    const campaign = async () => {
      const created = await t.call("POST", "/api/v1/campaigns", { key, body: { name: "News", template_id: templateId, tag_filter: { include_tags: ["all"] } } });
      expect(created.status).toBe(201);
      return created.body.id as string;
    };

    // Campaigns: three of ten recipients fit in a day's 30, the fourth does not.
    for (let i = 0; i < 3; i += 1) {
      const sent = await t.call("POST", `/api/v1/campaigns/${await campaign()}/send`, { key });
      expect(sent.status).toBe(200);
      expect(sent.body.total_recipients).toBe(10);
    }
    const fourth = await campaign();
    const refused = await t.call("POST", `/api/v1/campaigns/${fourth}/send`, { key });
    expect(refused.status).toBe(429);
    expect(refused.body.code).toBe("test_mode_quota_exceeded");
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect((await t.call("GET", `/api/v1/campaigns/${fourth}`, { key })).body.status).toBe("draft");

    // Transactional sends: 30 a day, then 429, and the refused one is never queued.
    for (let n = 0; n < DAILY; n += 1) expect((await send(key, `quota-${n}@example.com`, n)).status).toBe(202);
    const over = await send(key, "one-too-many@example.com", DAILY);
    expect(over.status).toBe(429);
    expect(over.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    expect(over.body.code).toBe("test_mode_quota_exceeded");
    expect(Number(over.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    const emails = await allItems<EmailJson>((path) => t.call("GET", path, { key }), "/api/v1/emails");
    expect(emails.filter((e) => e.to === "one-too-many@example.com")).toEqual([]);

    // The account's live key is not counted (its mail is sandboxed here too: npm start's default provider).
    const live = (await t.call("POST", `/admin/v1/accounts/${accountId}/api-keys`, { admin: true, body: { mode: "live" } })).body.key as string;
    expect((await t.call("POST", "/api/v1/templates", { key: live, body: { name: "Receipt", subject: "Receipt {{n}}", category: "transactional", mjml_content: RECEIPT } })).status).toBe(201);
    expect((await send(live, "live-customer@example.com", 1)).status).toBe(202);
  });
});
