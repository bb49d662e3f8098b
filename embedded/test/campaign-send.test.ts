import { GENEROUS_RATE_LIMIT_ENV } from "../../services/gateway/test/support/harness";
import { allItems, eventually, startTestPlatform, type TestPlatform } from "./support/platform-client";

// Campaigns sent through the real platform (gateway, subscribers, templates,
// campaigns, delivery; sandboxed: test-mode key): on the embedded store with
// the in-process bus, and on the MongoDB-compatible server with Kafka. The
// audience exactly, the ledger's counts adding up at every read, unsubscribes
// during a send, pause and resume, cancel. kill -9 mid-campaign is
// campaign-crash.test.ts.

const MJML = "<mjml><mj-body><mj-section><mj-column><mj-text>Hello {{metadata.name}}</mj-text></mj-column></mj-section></mj-body></mjml>";

interface Counts {
  total: number;
  pending: number;
  queued: number;
  sent: number;
  failed: number;
  skipped: number;
  skipped_by_reason: { unsubscribed: number; erased: number; suppressed: number; cancelled: number };
  snapshot_complete: boolean;
}
interface CampaignJson {
  id: string;
  status: string;
  counts: Counts;
  total_recipients: number | null;
  failure_reason: string | null;
}
interface EmailJson {
  id: string;
  to: string;
  status: string;
  template_id: string;
  error: string | null;
}

/** The counts add up to the total, and the skipped ones to their reasons. */
function checkCounts(c: Counts): void {
  expect(c.pending + c.queued + c.sent + c.failed + c.skipped).toBe(c.total);
  const r = c.skipped_by_reason;
  expect(r.unsubscribed + r.erased + r.suppressed + r.cancelled).toBe(c.skipped);
  for (const n of [c.pending, c.queued, c.sent, c.failed, c.skipped]) expect(n).toBeGreaterThanOrEqual(0);
}

describe.each(["embedded", "mongodb+kafka"] as const)("campaign sending (%s)", (store) => {
  let t: TestPlatform;
  let template: string;
  beforeAll(async () => {
    // 20 messages a second per tenant, so that a send lasts long enough to act during it.
    const real = store === "mongodb+kafka";
    t = await startTestPlatform(`campaign-send-${real ? "real" : store}`, { ...GENEROUS_RATE_LIMIT_ENV, CAMPAIGN_RATE: "20/1s" }, { mongo: real, kafka: real });
    const res = await t.call("POST", "/api/v1/templates", { body: { name: "Promo", subject: "News for {{metadata.name}}", category: "marketing", mjml_content: MJML } });
    expect(res.status).toBe(201);
    template = res.body.id;
    for (const name of ["news", "vip", "old", "bulk", "pausing", "cancelling"]) expect((await t.call("POST", "/api/v1/tags", { body: { name } })).status).toBe(201);
  }, 60_000);
  afterAll(() => t?.close());

  const subscriber = async (email: string, body: Record<string, unknown>) => {
    const res = await t.call("POST", "/api/v1/subscribers", { body: { email, ...body } });
    expect(res.status).toBe(201);
    return res.body.id as string;
  };
  const campaign = async (tagFilter: Record<string, unknown>) => {
    const res = await t.call("POST", "/api/v1/campaigns", { body: { name: "Campaign", template_id: template, tag_filter: tagFilter } });
    expect(res.status).toBe(201);
    return res.body.id as string;
  };
  const read = async (id: string): Promise<CampaignJson> => {
    const res = await t.call("GET", `/api/v1/campaigns/${id}`);
    expect(res.status).toBe(200);
    checkCounts(res.body.counts);
    return res.body;
  };
  const until = (id: string, done: (c: CampaignJson) => boolean) => eventually(() => read(id), done, 1200);
  const allEmails = () => allItems<EmailJson>((path) => t.call("GET", path), "/api/v1/emails");

  it("reaches exactly the active subscribers the filter matches, once each, with List-Unsubscribe and List-Id", async () => {
    const to = (name: string) => `${name}-${store}@example.com`;
    await subscriber(to("a"), { tags: ["news"], metadata: { name: "A", plan: "pro" } });
    await subscriber(to("b"), { tags: ["news", "vip"], metadata: { name: "B", plan: "free" } });
    await subscriber(to("c"), { tags: ["vip"], metadata: { name: "C", plan: "pro" } });
    await subscriber(to("d"), { tags: ["news", "old"], metadata: { name: "D", plan: "pro" } });
    await subscriber(to("e"), { tags: ["news"], status: "unsubscribed", metadata: { name: "E" } });
    const erased = await subscriber(to("f"), { tags: ["news"], metadata: { name: "F", plan: "pro" } });
    expect((await t.call("DELETE", `/api/v1/subscribers/${erased}`)).status).toBe(204);

    const shapes: Array<[Record<string, unknown>, string[]]> = [
      [{ include_tags: ["news"], exclude_tags: ["old"] }, ["a", "b"]],
      [{ include_tags: ["news", "vip"], match: "any" }, ["a", "b", "c", "d"]],
      [{ include_tags: ["news", "vip"], match: "all" }, ["b"]],
      [{ include_tags: ["news", "vip"], metadata: [{ key: "plan", equals: "pro" }] }, ["a", "c", "d"]],
      [{ include_tags: ["vip"], metadata: [{ key: "plan", in: ["free", "gold"] }] }, ["b"]],
    ];
    const before = new Set((await allEmails()).map((e) => e.id));
    for (const [filter, expected] of shapes) {
      const id = await campaign(filter);
      expect((await t.call("GET", `/api/v1/campaigns/${id}/recipient-count`)).body.count).toBe(expected.length);
      const sent = await t.call("POST", `/api/v1/campaigns/${id}/send`);
      expect(sent.status).toBe(200);
      expect(sent.body).toMatchObject({ status: "sending", total_recipients: expected.length, counts: { total: expected.length, snapshot_complete: true } });
      const done = await until(id, (c) => c.status === "sent");
      expect(done.counts).toMatchObject({ total: expected.length, sent: expected.length, failed: 0, skipped: 0, pending: 0, queued: 0 });
      const mails = (await allEmails()).filter((e) => !before.has(e.id));
      mails.forEach((e) => before.add(e.id));
      expect(mails.map((e) => e.to).sort()).toEqual(expected.map(to).sort());
      expect(mails.every((e) => e.status === "sent" && e.template_id === template)).toBe(true);
      // Sending again is a 409 naming the state.
      const again = await t.call("POST", `/api/v1/campaigns/${id}/send`);
      expect(again.status).toBe(409);
      expect(again.body.detail).toContain("sent");
    }
    // One message as it was handed to the provider.
    const mail = (await allEmails()).find((e) => e.to === to("b"))!;
    const kept = await t.call("GET", `/api/v1/emails/${mail.id}/sandbox`);
    expect(kept.body.subject).toBe("News for B");
    expect(kept.body.headers["List-Unsubscribe"]).toMatch(/^<https?:\/\/.+\/unsubscribe\?token=/);
    // One list per account and mode (RFC 2919), whatever the campaign; the campaign is X-Campaign-Id.
    expect(kept.body.headers["List-Id"]).toBe(`<${t.accountId}.test.localhost>`);
    expect(kept.body.headers["X-Campaign-Id"]).toMatch(/^cmp_[0-9a-z]{26}$/);
  }, 120_000);

  it("skips whoever unsubscribes or is erased during the send; the counts add up at every read", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 60; i++) ids.push(await subscriber(`bulk${i}-${store}@example.com`, { tags: ["bulk"], metadata: { name: `N${i}` } }));
    const id = await campaign({ include_tags: ["bulk"] });
    const sent = await t.call("POST", `/api/v1/campaigns/${id}/send`);
    expect(sent.body.total_recipients).toBe(60);
    // The last two are not reached yet at 20 a second.
    expect((await t.call("PATCH", `/api/v1/subscribers/${ids[59]}`, { body: { status: "unsubscribed" } })).status).toBe(200);
    expect((await t.call("DELETE", `/api/v1/subscribers/${ids[58]}`)).status).toBe(204);
    const done = await until(id, (c) => c.status === "sent");
    expect(done.counts).toMatchObject({ total: 60, sent: 58, skipped: 2, skipped_by_reason: { unsubscribed: 1, erased: 1 } });
    const emails = await allEmails();
    // A skip is an email record too, never sent: suppressed with its reason. An erased recipient leaves none (no address to keep).
    expect(emails.filter((e) => e.to === `bulk59-${store}@example.com`).map((e) => [e.status, e.error])).toEqual([["suppressed", "recipient_unsubscribed"]]);
    expect(emails.some((e) => e.to === `bulk58-${store}@example.com`)).toBe(false);
  }, 120_000);

  it("pause stops the hand-offs, resume goes on: everyone once, nobody skipped", async () => {
    for (let i = 0; i < 60; i++) await subscriber(`pause${i}-${store}@example.com`, { tags: ["pausing"], metadata: { name: `P${i}` } });
    const id = await campaign({ include_tags: ["pausing"] });
    expect((await t.call("POST", `/api/v1/campaigns/${id}/send`)).status).toBe(200);
    await until(id, (c) => c.counts.sent >= 10);
    const paused = await t.call("POST", `/api/v1/campaigns/${id}/pause`);
    expect(paused.status).toBe(200);
    expect(paused.body.status).toBe("paused");
    // What was handed over finishes; then nothing moves.
    const settled = await until(id, (c) => c.counts.queued === 0);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const still = await read(id);
    expect(still.status).toBe("paused");
    expect(still.counts.sent).toBe(settled.counts.sent);
    expect(still.counts.pending).toBeGreaterThan(0);
    // Illegal transitions name the state.
    const pauseAgain = await t.call("POST", `/api/v1/campaigns/${id}/pause`);
    expect(pauseAgain.status).toBe(409);
    expect(pauseAgain.body.detail).toContain("paused");
    expect((await t.call("POST", `/api/v1/campaigns/${id}/resume`)).body.status).toBe("sending");
    const done = await until(id, (c) => c.status === "sent");
    expect(done.counts).toMatchObject({ total: 60, sent: 60, skipped: 0, failed: 0 });
    const mails = (await allEmails()).filter((e) => e.to.startsWith("pause"));
    expect(mails).toHaveLength(60);
    expect(new Set(mails.map((e) => e.to)).size).toBe(60);
  }, 120_000);

  it("cancel stops everything not yet handed over; a cancelled campaign sends nothing more", async () => {
    for (let i = 0; i < 80; i++) await subscriber(`cancel${i}-${store}@example.com`, { tags: ["cancelling"], metadata: { name: `C${i}` } });
    const id = await campaign({ include_tags: ["cancelling"] });
    expect((await t.call("POST", `/api/v1/campaigns/${id}/send`)).status).toBe(200);
    await until(id, (c) => c.counts.sent >= 5);
    const cancelled = await t.call("POST", `/api/v1/campaigns/${id}/cancel`);
    expect(cancelled.body.status).toBe("cancelled");
    // Emails given to the provider in the instant of the cancel are recorded as
    // sent when their status arrives: wait until the counts stay put.
    let previous = "";
    const after = await eventually(
      async () => {
        await new Promise((resolve) => setTimeout(resolve, 500));
        return read(id);
      },
      (c) => {
        const same = JSON.stringify(c.counts) === previous;
        previous = JSON.stringify(c.counts);
        return same && c.counts.queued === 0 && c.counts.pending === 0;
      },
    );
    expect(after.counts.skipped_by_reason.cancelled).toBeGreaterThan(0);
    expect(after.counts.sent).toBeLessThan(80);
    expect(after.counts.sent + after.counts.skipped_by_reason.cancelled).toBe(80);
    const mails = (await allEmails()).filter((e) => e.to.startsWith("cancel") && e.status === "sent");
    expect(mails).toHaveLength(after.counts.sent);
    expect((await t.call("POST", `/api/v1/campaigns/${id}/resume`)).status).toBe(409);
  }, 120_000);

  it("schedules: a future send_at waits; one in the past sends at once", async () => {
    const later = await campaign({ include_tags: ["news"] });
    const at = new Date(Date.now() + 3_600_000).toISOString();
    const scheduled = await t.call("POST", `/api/v1/campaigns/${later}/send`, { body: { send_at: at } });
    expect(scheduled.status).toBe(200);
    expect(scheduled.body.status).toBe("scheduled");
    expect(new Date(scheduled.body.send_at).toISOString()).toBe(at);
    expect((await t.call("POST", `/api/v1/campaigns/${later}/cancel`)).body.status).toBe("cancelled");
    const now = await campaign({ include_tags: ["news"], exclude_tags: ["old"] });
    const past = await t.call("POST", `/api/v1/campaigns/${now}/send`, { body: { send_at: new Date(Date.now() - 1000).toISOString() } });
    expect(past.body.status).toBe("sending");
    expect((await until(now, (c) => c.status === "sent")).counts.sent).toBeGreaterThan(0);
  }, 60_000);
});
