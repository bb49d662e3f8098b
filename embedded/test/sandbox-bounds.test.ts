import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { GENEROUS_RATE_LIMIT_ENV } from "../../services/gateway/test/support/harness";
import { allItems, embeddedDocs, eventually, startTestPlatform, type TestPlatform } from "./support/platform-client";

// Issue 16, defect 2, through the REST API of `npm start`'s platform (embedded
// store, sandbox): sandboxed messages were kept for ever, each a document the
// embedded store held in memory (one test-key campaign to 50,000 took the
// process from 1.2 to 2.3 GB, linearly per repeat, for every tenant), and test
// keys were a free, unlimited workload.
//  - The sandbox keeps at most SANDBOX_MAX_MESSAGES_PER_TENANT per account and
//    mode (those kept longest ago go first), as small rows: the store's datafile, which
//    mirrors what it holds in memory, has no bodies and no more rows than
//    that; the bodies are in segment files under DATA_DIR/sandbox. A message no longer
//    kept is a 404 `sandbox_message_expired`.
//  - Test mode sends at most TEST_MODE_DAILY_LIMIT messages a day per account:
//    transactional sends beyond it are a 429 `test_mode_quota_exceeded` with
//    Retry-After, and send nothing; a campaign's recipients are charged as
//    they are handed to delivery, and past the quota the campaign waits (a
//    campaign larger than a whole day's quota is a 403 and stays a draft).
//    Issue 16's second review: campaigns were charged their audience when the
//    send was asked for, so a campaign scheduled to an empty tag (charged 0)
//    sent to everyone added before its time, two concurrent sends of one
//    draft were both charged, and a cancelled schedule was never given back.

const CAP = 5;
const DAILY = 12;
const RECEIPT = "<mjml><mj-body><mj-section><mj-column><mj-text>Receipt {{n}}: thank you for your order.</mj-text></mj-column></mj-section></mj-body></mjml>";

interface Counts {
  pending: number;
  queued: number;
  sent: number;
  failed: number;
  skipped: number;
}
interface CampaignJson {
  status: string;
  counts: Counts;
}
interface EmailJson {
  id: string;
  to: string | null;
  status: string;
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

  it("keeps at most SANDBOX_MAX_MESSAGES_PER_TENANT messages of a test key, as small rows with the bodies in segment files; older ones answer sandbox_message_expired", async () => {
    const { id: accountId, key } = await account("Sandboxed");
    const ids: string[] = [];
    // One after another, each kept before the next: the cap drops those kept longest ago.
    for (let n = 0; n < DAILY; n += 1) {
      const sent = await send(key, `buyer-${n}@example.com`, n);
      expect(sent.status).toBe(202);
      ids.push(sent.body.id as string);
      const done = await eventually(async () => (await t.call("GET", `/api/v1/emails/${sent.body.id}`, { key })).body as EmailJson, (e) => e.status === "sent", 600);
      expect(done.status).toBe("sent");
    }

    // The newest is there, whole.
    const last = DAILY - 1;
    const newest = await t.call("GET", `/api/v1/emails/${ids[last]}/sandbox`, { key });
    expect(newest.status).toBe(200);
    expect(newest.body).toMatchObject({ subject: `Receipt ${last}`, to: `buyer-${last}@example.com` });
    expect(newest.body.html).toContain("thank you for your order");
    // The oldest is no longer kept, and says so.
    const oldest = await t.call("GET", `/api/v1/emails/${ids[0]}/sandbox`, { key });
    expect(oldest.status).toBe(404);
    expect(oldest.body.code).toBe("sandbox_message_expired");

    // What the embedded store holds (its datafile mirrors its memory): at most the cap, no bodies.
    const rows = embeddedDocs(join(t.dataDir, "delivery", "sandbox_messages.db")).filter((doc) => doc.tenant === `${accountId}:test`);
    expect(rows.length).toBeLessThanOrEqual(CAP);
    expect(rows.map((row) => row._id)).toContain(ids[last]);
    for (const row of rows) {
      expect(Object.keys(row).sort()).toEqual(["_id", "body_length", "body_offset", "body_segment", "captured_at", "from", "subject", "tenant", "to"]);
    }
    // The bodies are in segment files of the tenant, each row naming one that is there.
    const bodies = join(t.dataDir, "sandbox", accountId, "test");
    expect(existsSync(bodies)).toBe(true);
    const segments = readdirSync(bodies);
    for (const file of segments) expect(file).toMatch(/^[1-9][0-9]*\.bodies$/);
    for (const row of rows) expect(segments).toContain(`${row.body_segment as string}.bodies`);
  });

  it("refuses test-mode sends past TEST_MODE_DAILY_LIMIT with 429 test_mode_quota_exceeded and Retry-After, sending nothing; live keys are not counted", async () => {
    const { id: accountId, key } = await account("Quota");
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

  /** A test key of a new account with `n` subscribers tagged `tag` (made first when `n` is 0). */
  async function audience(key: string, tag: string, n: number, from = 0): Promise<void> {
    if (from === 0) expect((await t.call("POST", "/api/v1/tags", { key, body: { name: tag } })).status).toBe(201);
    for (let i = from; i < from + n; i += 1) {
      expect((await t.call("POST", "/api/v1/subscribers", { key, body: { email: `${tag}-${i}@example.com`, tags: [tag] } })).status).toBe(201);
    }
  }
  const templateOf = async (key: string) => (await t.call("GET", "/api/v1/templates", { key })).body.items[0].id as string;
  async function draft(key: string, tags: string[]): Promise<string> {
    const created = await t.call("POST", "/api/v1/campaigns", { key, body: { name: tags.join("+"), template_id: await templateOf(key), tag_filter: { include_tags: tags } } });
    expect(created.status).toBe(201);
    return created.body.id as string;
  }
  const read = async (key: string, id: string) => (await t.call("GET", `/api/v1/campaigns/${id}`, { key })).body as CampaignJson;
  /** The counts of these campaigns added up, once `done` holds for them (polled; bounded by attempts). */
  const totals = (key: string, ids: string[], done: (c: Counts & { statuses: string[] }) => boolean) =>
    eventually(
      async () => {
        const all = await Promise.all(ids.map((id) => read(key, id)));
        const sum = { pending: 0, queued: 0, sent: 0, failed: 0, skipped: 0 };
        for (const c of all) for (const k of Object.keys(sum) as Array<keyof typeof sum>) sum[k] += c.counts[k];
        return { ...sum, statuses: all.map((c) => c.status) };
      },
      done,
      600,
    );

  it("charges a test-mode campaign's recipients as they are handed over: past the quota it waits, its recipients pending; a whole day's quota too small is a 403", async () => {
    const { key } = await account("Campaign quota");
    await audience(key, "all", 5);
    // Three campaigns of five: all start; twelve recipients go out, three wait for the quota.
    const ids: string[] = [];
    for (let i = 0; i < 3; i += 1) {
      const id = await draft(key, ["all"]);
      const sent = await t.call("POST", `/api/v1/campaigns/${id}/send`, { key });
      expect(sent.status).toBe(200);
      expect(sent.body).toMatchObject({ status: "sending", total_recipients: 5 });
      ids.push(id);
    }
    const waiting = await totals(key, ids, (c) => c.sent === DAILY);
    expect(waiting).toMatchObject({ sent: DAILY, pending: 3 * 5 - DAILY, queued: 0, failed: 0, skipped: 0 });
    // The campaign whose recipients wait is still sending (the others may have finished).
    expect(waiting.statuses).toContain("sending");

    // More recipients than a whole day's quota: refused at once, and the campaign stays a draft.
    await audience(key, "more", DAILY + 1 - 5);
    const big = await draft(key, ["all", "more"]);
    const refused = await t.call("POST", `/api/v1/campaigns/${big}/send`, { key });
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe("test_mode_campaign_too_large");
    expect((await read(key, big)).status).toBe("draft");
  });

  it("charges what goes out, not what was asked for: a cancelled schedule costs nothing, and a campaign scheduled to an empty tag is charged for who it reaches", async () => {
    const { key } = await account("Scheduled quota");
    await audience(key, "ten", 10);
    // Scheduled for tomorrow, then cancelled: nothing was handed over, so nothing is charged.
    const tomorrow = await draft(key, ["ten"]);
    const scheduled = await t.call("POST", `/api/v1/campaigns/${tomorrow}/send`, { key, body: { send_at: new Date(Date.now() + 86_400_000).toISOString() } });
    expect(scheduled.status).toBe(200);
    expect(scheduled.body.status).toBe("scheduled");
    expect((await t.call("POST", `/api/v1/campaigns/${tomorrow}/cancel`, { key })).body.status).toBe("cancelled");
    // Scheduled soon to a tag nobody has yet; five join before its time.
    await audience(key, "later", 0);
    const soon = await draft(key, ["later"]);
    const atSoon = await t.call("POST", `/api/v1/campaigns/${soon}/send`, { key, body: { send_at: new Date(Date.now() + 10_000).toISOString() } });
    expect(atSoon.status).toBe(200);
    await audience(key, "later", 5, 1);
    expect((await read(key, soon)).status).toBe("scheduled");
    // Sent now to the ten: the cancelled schedule left the whole quota.
    const now = await draft(key, ["ten"]);
    const sent = await t.call("POST", `/api/v1/campaigns/${now}/send`, { key });
    expect(sent.status).toBe(200);
    expect(sent.body.total_recipients).toBe(10);

    // Of the fifteen recipients of the two, the day's twelve go out; the other three wait.
    const waiting = await totals(key, [now, soon], (c) => c.sent === DAILY);
    expect(waiting).toMatchObject({ sent: DAILY, pending: 15 - DAILY, queued: 0, failed: 0, skipped: 0 });
  });

  it("charges a draft sent by concurrent requests once", async () => {
    const { key } = await account("Concurrent quota");
    await audience(key, "six", 6);
    const id = await draft(key, ["six"]);
    const answers = await Promise.all(Array.from({ length: 4 }, () => t.call("POST", `/api/v1/campaigns/${id}/send`, { key })));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 409, 409, 409]);
    // The six went out, and six more fit in the day's twelve.
    const again = await draft(key, ["six"]);
    expect((await t.call("POST", `/api/v1/campaigns/${again}/send`, { key })).status).toBe(200);
    const done = await totals(key, [id, again], (c) => c.statuses.every((status) => status === "sent"));
    expect(done).toMatchObject({ sent: DAILY, pending: 0, queued: 0, statuses: ["sent", "sent"] });
  });
});
