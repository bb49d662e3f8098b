import { SmtpSink } from "@emailsvc/testing";
import { GENEROUS_RATE_LIMIT_ENV } from "../../services/gateway/test/support/harness";
import { eventually, startTestPlatform, type TestPlatform } from "./support/platform-client";

// POST /api/v1/emails/batch through the public API of the real platform
// (every answer checked against the served OpenAPI document by `call`): each
// message is decided by the single send's rules and answered in its place,
// the batch as a whole is refused only when it is malformed, too large or
// over the send budgets, and live mail really reaches an SMTP server.

const MJML = `<mjml><mj-body><mj-section><mj-column><mj-text>Hello {{name}}</mj-text></mj-column></mj-section></mj-body></mjml>`;

interface Entry {
  index: number;
  status: number;
  email: { id: string; status: string; error: string | null; to: string; idempotency_key: string | null } | null;
  replayed: boolean;
  error: { code: string; status: number; errors?: Array<{ field: string; message: string }> } | null;
}

describe.each(["embedded", "mongodb+kafka"] as const)("batch sending (%s)", (store) => {
  let t: TestPlatform;
  let sink: SmtpSink;
  let live: string;
  const addr = (name: string) => `${name}-${store.replace(/\W/g, "")}@example.com`;

  beforeAll(async () => {
    sink = await new SmtpSink().start();
    const real = store === "mongodb+kafka";
    t = await startTestPlatform(
      `batch-${real ? "real" : store}`,
      { ...GENEROUS_RATE_LIMIT_ENV, EMAIL_PROVIDER: "smtp", SMTP_URL: sink.url(), OUTBOX_SWEEP_INTERVAL_MS: "200" },
      { mongo: real, kafka: real },
    );
    live = (await t.call("POST", `/admin/v1/accounts/${t.accountId}/api-keys`, { admin: true, body: { mode: "live" } })).body.key;
    for (const key of [live, t.key]) {
      for (const [slug, category] of [["receipt", "transactional"], ["news", "marketing"]] as const) {
        const res = await t.call("POST", "/api/v1/templates", { key, body: { name: slug, slug, subject: `${slug} {{name}}`, category, mjml_content: MJML } });
        expect(res.status).toBe(201);
      }
    }
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await sink?.close();
  });

  const batch = (messages: unknown, key = live) => t.call("POST", "/api/v1/emails/batch", { key, body: messages });
  const settled = (id: string, key = live, attempts = 200) =>
    eventually(
      async () => (await t.call("GET", `/api/v1/emails/${id}`, { key })).body as { status: string; error: string | null },
      (e) => e.status !== "queued",
      attempts,
    );

  it("answers each message of a mixed batch in its place: ids for the good ones, the single send's errors for the bad ones; live mail arrives once per key", async () => {
    const unsubscribed = addr("unsub");
    expect((await t.call("POST", "/api/v1/subscribers", { key: live, body: { email: unsubscribed, status: "unsubscribed" } })).status).toBe(201);
    const first = addr("first");
    const res = await batch([
      { template_slug: "receipt", to: first, variables: { name: "Ada" }, idempotency_key: `k1-${store}` },
      { template_slug: "receipt", to: "not an address" },
      { template_slug: "no-such-template", to: addr("nobody") },
      { template_slug: "receipt", to: addr("extra"), status: "sent" },
      { template_slug: "news", to: unsubscribed },
      // The key of message 0 with the same message: the same email, no second mail.
      { template_slug: "receipt", to: first, variables: { name: "Ada" }, idempotency_key: `k1-${store}` },
      { template_slug: "receipt", to: addr("second"), variables: { name: "Bob" }, idempotency_key: `k2-${store}` },
      // The key of message 6 with another message: refused, as a single send reusing it would be.
      { template_slug: "receipt", to: addr("third"), idempotency_key: `k2-${store}` },
      { template_slug: "receipt", to: addr("from"), from: { email: "news@unverified.example" } },
      { template_slug: "receipt", to: unsubscribed },
    ]);
    expect(res.status).toBe(200);
    const results = res.body.results as Entry[];
    expect(results.map((r) => [r.index, r.status, r.error?.code ?? r.email?.status])).toEqual([
      [0, 202, "queued"],
      [1, 400, "validation_failed"],
      [2, 404, "template_not_found"],
      [3, 400, "validation_failed"],
      [4, 202, "suppressed"],
      [5, 202, "queued"],
      [6, 202, "queued"],
      [7, 409, "idempotency_key_reused"],
      [8, 422, "from_domain_not_verified"],
      [9, 202, "queued"],
    ]);
    expect(res.body).toMatchObject({ accepted: 5, failed: 5 });
    expect(results[1]!.error!.errors).toEqual([{ field: "to", message: "is not a valid email address" }]);
    expect(results[3]!.error!.errors).toEqual([{ field: "status", message: "is not a known field" }]);
    expect(results[4]!.email).toMatchObject({ status: "suppressed", error: "recipient_unsubscribed" });
    expect(results[5]).toMatchObject({ replayed: true, email: { id: results[0]!.email!.id } });
    expect(results[0]!.replayed).toBe(false);

    // Each email is the single send's: GET shows it, the live ones go out over SMTP, the replay sent nothing more.
    expect(await settled(results[0]!.email!.id)).toMatchObject({ status: "sent" });
    expect(await settled(results[6]!.email!.id)).toMatchObject({ status: "sent" });
    expect(await settled(results[9]!.email!.id)).toMatchObject({ status: "sent" });
    expect(await settled(results[4]!.email!.id)).toMatchObject({ status: "suppressed", error: "recipient_unsubscribed" });
    const arrived = await eventually(
      async () => sink.to(first).filter((m) => m.accepted),
      (messages) => messages.length >= 1,
    );
    expect(arrived).toHaveLength(1);
    expect(sink.to(addr("second")).filter((m) => m.accepted)).toHaveLength(1);
    expect(sink.to(unsubscribed).filter((m) => m.accepted)).toHaveLength(1);
    for (const nobody of ["nobody", "extra", "third", "from"]) expect(sink.to(addr(nobody))).toHaveLength(0);

    // Across batches and single sends: a key is one email, whichever door used it.
    const again = await batch([
      { template_slug: "receipt", to: first, variables: { name: "Ada" }, idempotency_key: `k1-${store}` },
      { template_slug: "receipt", to: first, variables: { name: "Eve" }, idempotency_key: `k1-${store}` },
    ]);
    expect(again.status).toBe(200);
    const [replay, reused] = again.body.results as Entry[];
    expect(replay).toMatchObject({ status: 202, replayed: true, email: { id: results[0]!.email!.id, status: "queued" } });
    expect(reused).toMatchObject({ status: 409, error: { code: "idempotency_key_reused" } });
    const single = await t.call("POST", "/api/v1/emails/send", { key: live, body: { template_slug: "receipt", to: addr("second"), variables: { name: "Bob" }, idempotency_key: `k2-${store}` } });
    expect(single.status).toBe(202);
    expect(single.headers.get("idempotent-replayed")).toBe("true");
    expect(single.body.id).toBe(results[6]!.email!.id);
    expect(sink.to(first).filter((m) => m.accepted)).toHaveLength(1);
  });

  it("decides a key given again after a message that was not stored as the same requests one after the other would", async () => {
    const key = `later-${store}`;
    const res = await batch([
      { template_slug: "no-such-template", to: addr("later"), idempotency_key: key },
      { template_slug: "no-such-template", to: addr("later"), idempotency_key: key },
      { template_slug: "receipt", to: addr("later"), idempotency_key: key },
      { template_slug: "receipt", to: addr("later"), idempotency_key: key },
      { template_slug: "news", to: addr("later"), idempotency_key: key },
    ]);
    expect(res.status).toBe(200);
    const results = res.body.results as Entry[];
    expect(results.map((r) => [r.status, r.error?.code ?? r.email?.status, r.replayed])).toEqual([
      [404, "template_not_found", false],
      [404, "template_not_found", false],
      [202, "queued", false],
      [202, "queued", true],
      [409, "idempotency_key_reused", false],
    ]);
    expect(results[3]!.email!.id).toBe(results[2]!.email!.id);
  });

  it("keeps test-mode mail in the sandbox, and no key sees another mode's emails", async () => {
    const res = await batch([{ template_slug: "receipt", to: addr("sandboxed"), variables: { name: "Tess" } }], t.key);
    expect(res.status).toBe(200);
    const [entry] = res.body.results as Entry[];
    expect(entry).toMatchObject({ status: 202, email: { status: "queued" } });
    expect(await settled(entry!.email!.id, t.key)).toMatchObject({ status: "sent" });
    const kept = await t.call("GET", `/api/v1/emails/${entry!.email!.id}/sandbox`, { key: t.key });
    expect(kept.status).toBe(200);
    expect(kept.body.subject).toBe("receipt Tess");
    expect(sink.to(addr("sandboxed"))).toHaveLength(0);
    expect((await t.call("GET", `/api/v1/emails/${entry!.email!.id}`, { key: live })).status).toBe(404);
  });

  it("refuses a malformed batch as a whole, and sends nothing of it", async () => {
    const message = (i: number) => ({ template_slug: "receipt", to: addr(`whole${i}`) });
    const tooMany = await batch(Array.from({ length: 501 }, (_, i) => message(i)));
    expect([tooMany.status, tooMany.body.code]).toEqual([400, "validation_failed"]);
    const notArray = await batch({ messages: [message(0)] });
    expect([notArray.status, notArray.body.code]).toEqual([400, "validation_failed"]);
    const empty = await batch([]);
    expect([empty.status, empty.body.code]).toEqual([400, "validation_failed"]);
    const huge = await t.call("POST", "/api/v1/emails/batch", { key: live, raw: `[${JSON.stringify({ ...message(0), variables: { pad: "x".repeat(9 * 1024 * 1024) } })}]` });
    expect([huge.status, huge.body.code]).toEqual([413, "payload_too_large"]);
    const emails = (await t.call("GET", "/api/v1/emails?limit=500", { key: live })).body.items as Array<{ to: string }>;
    expect(emails.filter((e) => e.to.startsWith("whole"))).toHaveLength(0);
  });

  it("takes a full batch of 500 in one request", async () => {
    const messages = Array.from({ length: 500 }, (_, i) => ({ template_slug: "receipt", to: addr(`full${i}`), variables: { name: `n${i}` }, idempotency_key: `full-${store}-${i}` }));
    const res = await batch(messages, t.key);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ accepted: 500, failed: 0 });
    const ids = (res.body.results as Entry[]).map((r) => r.email!.id);
    expect(new Set(ids).size).toBe(500);
    // Again: every message replays its email.
    const again = await batch(messages, t.key);
    expect((again.body.results as Entry[]).map((r) => r.email!.id)).toEqual(ids);
    expect((again.body.results as Entry[]).every((r) => r.replayed)).toBe(true);
    // The batch's send requests went out in one publish: its first email is sent (all 500 take FerretDB tens of seconds).
    expect(await settled(ids[0]!, t.key, 500)).toMatchObject({ status: "sent" });
  });
});

describe("batch sending and the budgets (embedded)", () => {
  let t: TestPlatform;

  beforeAll(async () => {
    t = await startTestPlatform("batch-budgets", { ...GENEROUS_RATE_LIMIT_ENV, RATE_LIMIT_SEND: "5/60s", TEST_MODE_DAILY_LIMIT: "4" });
    const res = await t.call("POST", "/api/v1/templates", { body: { name: "r", slug: "r", subject: "r", category: "transactional", mjml_content: MJML } });
    expect(res.status).toBe(201);
  }, 60_000);
  afterAll(() => t?.close());

  const message = (i: number) => ({ template_slug: "r", to: `budget${i}@example.com`, idempotency_key: `budget-${i}` });
  const emailsTo = async (prefix: string) =>
    ((await t.call("GET", "/api/v1/emails?limit=500")).body.items as Array<{ to: string }>).filter((e) => e.to.startsWith(prefix));

  it("charges each message to the send budget, all or none; a batch no wait could admit is a 413", async () => {
    const three = await t.call("POST", "/api/v1/emails/batch", { body: [message(0), message(1), message(2)] });
    expect(three.status).toBe(200);
    expect(three.headers.get("ratelimit-remaining")).toBe("2");
    expect(three.headers.get("ratelimit-policy")).toMatch(/^5;w=60;comment="send per API key"/);
    // Three more do not fit in the two left: refused whole, with the wait until they do.
    const refused = await t.call("POST", "/api/v1/emails/batch", { body: [message(3), message(4), message(5)] });
    expect([refused.status, refused.body.code]).toEqual([429, "rate_limited"]);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(refused.body.detail).toMatch(/^Too many send requests for this API key: this one counts 3, the budget is 5 per 60 s\./);
    const tooBig = await t.call("POST", "/api/v1/emails/batch", { body: Array.from({ length: 6 }, (_, i) => message(10 + i)) });
    expect([tooBig.status, tooBig.body.code]).toEqual([413, "batch_exceeds_rate_limit"]);
    // A malformed batch counts one, as any refused request: one of the two left.
    const malformed = await t.call("POST", "/api/v1/emails/batch", { body: { not: "an array" } });
    expect([malformed.status, malformed.body.code]).toEqual([400, "validation_failed"]);
    expect(malformed.headers.get("ratelimit-remaining")).toBe("1");
    // A single send takes the last one.
    expect((await t.call("POST", "/api/v1/emails/send", { body: message(20) })).status).toBe(202);
    const spent = await t.call("POST", "/api/v1/emails/batch", { raw: "[not json" });
    expect([spent.status, spent.body.code]).toEqual([429, "rate_limited"]);
    expect((await emailsTo("budget")).map((e) => e.to).sort()).toEqual(["budget0@example.com", "budget1@example.com", "budget20@example.com", "budget2@example.com"]);
  });

  it("charges test-mode mail to the day's quota per message: new emails that do not all fit are refused, replays still answered", async () => {
    // The quota (4) is spent by the four emails above; another test key of the account (its own send budget) shares it.
    const other = (await t.call("POST", `/admin/v1/accounts/${t.accountId}/api-keys`, { admin: true, body: { mode: "test" } })).body.key as string;
    const res = await t.call("POST", "/api/v1/emails/batch", { key: other, body: [message(0), message(30)] });
    expect(res.status).toBe(200);
    const [replay, fresh] = res.body.results as Entry[];
    expect(replay).toMatchObject({ status: 202, replayed: true });
    expect(fresh).toMatchObject({ status: 429, error: { code: "test_mode_quota_exceeded" } });
    expect(await emailsTo("budget30")).toHaveLength(0);
  });
});
