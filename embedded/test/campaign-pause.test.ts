import { SmtpSink } from "@emailsvc/testing";
import { GENEROUS_RATE_LIMIT_ENV } from "../../services/gateway/test/support/harness";
import { eventually, startTestPlatform, storedDocs, type TestPlatform } from "./support/platform-client";

// Issue 16, defect 7: pausing a campaign smaller than CAMPAIGN_MAX_IN_FLIGHT
// did nothing, because every recipient had already been handed to delivery
// and delivery sent them all. Pause must stop whatever delivery has not given
// to the provider: such an email is neither sent nor failed while the
// campaign is paused, and goes out exactly once after resume. Live mode over a
// real SMTP server (the test sink) that holds its replies, so that the pause
// comes while the campaign is mid-send; delivery sends one email at a time per
// batch (DELIVERY_CONCURRENCY=1), so at most one email per partition of the
// bus (3) is in the provider's hands when the pause comes (on Kafka, where a
// consumer member handles one batch at a time, exactly one: and the pause
// must not wait behind the send batch it has to stop). On the embedded store
// with the in-process bus, and on the MongoDB-compatible server with Kafka.
//
// And concurrent pause and resume calls: each answer is the state its own
// write produced (or a 409), never another call's.

const MJML = "<mjml><mj-body><mj-section><mj-column><mj-text>Hello {{metadata.name}}</mj-text></mj-column></mj-section></mj-body></mjml>";
const RECIPIENTS = 12;
/** Partitions of every topic, on both buses (the in-process default, KAFKA_TOPIC_PARTITIONS unset). */
const PARTITIONS = 3;

interface Counts {
  total: number;
  pending: number;
  queued: number;
  sent: number;
  failed: number;
  skipped: number;
}
interface CampaignJson {
  id: string;
  status: string;
  counts: Counts;
}

describe.each(["embedded", "mongodb+kafka"] as const)("pausing a campaign over SMTP (%s)", (store) => {
  let t: TestPlatform;
  let sink: SmtpSink;
  let live = "";
  let template = "";

  beforeAll(async () => {
    sink = await new SmtpSink().start();
    const real = store === "mongodb+kafka";
    t = await startTestPlatform(
      `campaign-pause-${real ? "real" : store}`,
      { ...GENEROUS_RATE_LIMIT_ENV, EMAIL_PROVIDER: "smtp", SMTP_URL: sink.url(), EMAIL_FROM: "News <news@sender.example>", DELIVERY_CONCURRENCY: "1" },
      { mongo: real, kafka: real },
    );
    const key = await t.call("POST", `/admin/v1/accounts/${t.accountId}/api-keys`, { admin: true, body: { mode: "live" } });
    expect(key.status).toBe(201);
    live = key.body.key;
    const made = await t.call("POST", "/api/v1/templates", {
      key: live,
      body: { name: "Pause news", subject: "News for {{metadata.name}}", category: "marketing", mjml_content: MJML },
    });
    expect(made.status).toBe(201);
    template = made.body.id;
  }, 90_000);
  afterAll(async () => {
    await t?.close();
    await sink?.close();
  });

  const call = (method: string, path: string, body?: unknown) => t.call(method, path, { key: live, ...(body !== undefined ? { body } : {}) });
  const read = async (id: string): Promise<CampaignJson> => {
    const res = await call("GET", `/api/v1/campaigns/${id}`);
    expect(res.status).toBe(200);
    const c: Counts = res.body.counts;
    expect(c.pending + c.queued + c.sent + c.failed + c.skipped).toBe(c.total);
    return res.body;
  };
  const campaignTo = async (tag: string, count: number): Promise<{ id: string; addresses: string[] }> => {
    expect((await call("POST", "/api/v1/tags", { name: tag })).status).toBe(201);
    const addresses = Array.from({ length: count }, (_, i) => `${tag}-${i}@example.com`);
    for (const [i, email] of addresses.entries()) {
      expect((await call("POST", "/api/v1/subscribers", { email, tags: [tag], metadata: { name: `N${i}` } })).status).toBe(201);
    }
    const made = await call("POST", "/api/v1/campaigns", { name: tag, template_id: template, tag_filter: { include_tags: [tag] } });
    expect(made.status).toBe(201);
    return { id: made.body.id, addresses };
  };
  const acceptedFor = (addresses: string[]) => addresses.map((a) => sink.to(a).filter((m) => m.accepted));

  it("holds every email not yet given to the provider while paused, and sends each exactly once after resume", async () => {
    const { id, addresses } = await campaignTo(`pause-${store.replace(/\W/g, "")}`, RECIPIENTS);
    // The relay holds its reply to the first message: the campaign is mid-send when the pause comes.
    sink.dataDelayMs = 60_000;
    const firstArrived = sink.nextData();
    const sent = await call("POST", `/api/v1/campaigns/${id}/send`);
    expect(sent.status).toBe(200);
    expect(sent.body.total_recipients).toBe(RECIPIENTS);
    await firstArrived;

    const paused = await call("POST", `/api/v1/campaigns/${id}/pause`);
    expect(paused.status).toBe(200);
    expect(paused.body.status).toBe("paused");
    // Delivery learns of the pause from campaign.status_changed; the relay
    // answers once delivery has recorded it (its paused_campaigns), so that
    // every email after the ones the relay holds meets the pause. Polled: a
    // fixed wait failed under load, when more emails reached the relay.
    const recorded = await eventually(
      async () => (await storedDocs(t, "delivery", "paused_campaigns")).some((doc) => doc._id === id),
      (known) => known,
      1200,
    );
    expect(recorded).toBe(true);
    // What the relay has finishes; every other recipient is back to waiting, neither sent nor failed.
    sink.dataDelayMs = 0;
    sink.releaseHeld();
    const settled = await eventually(() => read(id), (c) => c.counts.queued === 0 && c.counts.sent >= 1, 1200);
    expect(settled.status).toBe("paused");
    expect(settled.counts).toMatchObject({ total: RECIPIENTS, queued: 0, failed: 0, skipped: 0 });
    expect(settled.counts.sent).toBeLessThanOrEqual(PARTITIONS);
    expect(settled.counts.pending).toBe(RECIPIENTS - settled.counts.sent);
    expect(acceptedFor(addresses).flat()).toHaveLength(settled.counts.sent);

    const resumed = await call("POST", `/api/v1/campaigns/${id}/resume`);
    expect(resumed.status).toBe(200);
    expect(resumed.body.status).toBe("sending");
    const done = await eventually(() => read(id), (c) => c.status === "sent", 1200);
    expect(done.status).toBe("sent");
    expect(done.counts).toMatchObject({ total: RECIPIENTS, sent: RECIPIENTS, pending: 0, queued: 0, failed: 0, skipped: 0 });
    // Exactly once each, at the relay and in the email records.
    expect(acceptedFor(addresses).map((copies) => copies.length)).toEqual(Array(RECIPIENTS).fill(1));
    const emails = (await call("GET", "/api/v1/emails?limit=100")).body.items as Array<{ to: string; status: string }>;
    const ours = emails.filter((e) => addresses.includes(e.to));
    expect(ours).toHaveLength(RECIPIENTS);
    expect(ours.every((e) => e.status === "sent")).toBe(true);
  }, 180_000);

  it("answers concurrent pause and resume calls with the state each call's own write produced, or a 409", async () => {
    const { id, addresses } = await campaignTo(`storm-${store.replace(/\W/g, "")}`, 2);
    // The relay holds the first message, so the campaign stays sending (or paused) throughout.
    sink.dataDelayMs = 60_000;
    const firstArrived = sink.nextData();
    expect((await call("POST", `/api/v1/campaigns/${id}/send`)).status).toBe(200);
    await firstArrived;
    const wrong: string[] = [];
    let answered = 0;
    for (let round = 0; round < 6; round++) {
      const actions = Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? "pause" : "resume"));
      const answers = await Promise.all(actions.map(async (action) => ({ action, res: await call("POST", `/api/v1/campaigns/${id}/${action}`) })));
      for (const { action, res } of answers) {
        if (res.status === 409) {
          expect(res.body.code).toBe("campaign_state_conflict");
          continue;
        }
        expect(res.status).toBe(200);
        answered++;
        const expected = action === "pause" ? "paused" : "sending";
        if (res.body.status !== expected) wrong.push(`${action} answered ${res.body.status}`);
      }
    }
    expect(wrong).toEqual([]);
    expect(answered).toBeGreaterThan(0);
    sink.dataDelayMs = 0;
    sink.releaseHeld();
    const now = await read(id);
    if (now.status === "paused") expect((await call("POST", `/api/v1/campaigns/${id}/resume`)).status).toBe(200);
    const done = await eventually(() => read(id), (c) => c.status === "sent", 1200);
    // With the emails' own statuses and reasons, so that a failure says which and why.
    const emails = ((await call("GET", "/api/v1/emails?limit=100")).body.items as Array<{ to: string; status: string; error: string | null }>)
      .filter((e) => addresses.includes(e.to))
      .map(({ status, error }) => ({ status, error }));
    expect({ counts: done.counts, emails }).toMatchObject({ counts: { total: 2, sent: 2 }, emails: [{ status: "sent" }, { status: "sent" }] });
  }, 180_000);
});
