import { SmtpSink } from "@emailsvc/testing";
import { GENEROUS_RATE_LIMIT_ENV } from "../../services/gateway/test/support/harness";
import { allItems, eventually, startTestPlatform, type TestPlatform } from "./support/platform-client";

// Bounces at SMTP time, deferred retries and the suppression list, through
// the REST API of the real platform with a real SMTP relay (SmtpSink refuses
// RCPT or DATA with the code a test chooses): on the embedded store with the
// in-process bus, and on the MongoDB-compatible server with Kafka.

const MJML = "<mjml><mj-body><mj-section><mj-column><mj-text>Hello {{email}}</mj-text></mj-column></mj-section></mj-body></mjml>";

interface EmailJson {
  id: string;
  to: string | null;
  status: string;
  error: string | null;
  sent_at: string | null;
  bounce: { type: string; diagnostic: string } | null;
  history: Array<{ status: string; at: string; detail: string }>;
  next_attempt_at: string | null;
}
interface SuppressionJson {
  id: string;
  email: string | null;
  reason: string;
  source: string;
  email_id: string | null;
  created_at: string;
}

describe.each(["embedded", "mongodb+kafka"] as const)("bounces, retries and the suppression list (%s)", (store) => {
  let t: TestPlatform;
  let sink: SmtpSink;
  let live: string;
  const templateIds: Record<string, string> = {};
  const addr = (name: string) => `${name}-${store.replace(/\W/g, "")}@example.com`;

  beforeAll(async () => {
    sink = await new SmtpSink().start();
    const real = store === "mongodb+kafka";
    t = await startTestPlatform(
      `bounces-${real ? "real" : store}`,
      {
        ...GENEROUS_RATE_LIMIT_ENV,
        EMAIL_PROVIDER: "smtp",
        SMTP_URL: sink.url(),
        OUTBOX_SWEEP_INTERVAL_MS: "200",
        // A deferred email is tried again after 1 s, 2 s, 4 s…, for 0.002 h (7.2 s), then bounces soft.
        DELIVERY_RETRY_BACKOFF_SECONDS: "1",
        DELIVERY_RETRY_HOURS: "0.002",
      },
      { mongo: real, kafka: real },
    );
    // Live mail goes over SMTP (a test key's always stays in the sandbox).
    live = (await t.call("POST", `/admin/v1/accounts/${t.accountId}/api-keys`, { admin: true, body: { mode: "live" } })).body.key;
    for (const [slug, category] of [["receipt", "transactional"], ["news", "marketing"]] as const) {
      const res = await t.call("POST", "/api/v1/templates", { key: live, body: { name: slug, slug, subject: slug, category, mjml_content: MJML } });
      expect(res.status).toBe(201);
      templateIds[slug] = res.body.id;
    }
    expect((await t.call("POST", "/api/v1/tags", { key: live, body: { name: "news" } })).status).toBe(201);
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await sink?.close();
  });

  const subscriber = async (email: string, body: Record<string, unknown> = {}) => {
    const res = await t.call("POST", "/api/v1/subscribers", { key: live, body: { email, ...body } });
    expect(res.status).toBe(201);
    return res.body.id as string;
  };
  const send = async (slug: string, to: string) => {
    const res = await t.call("POST", "/api/v1/emails/send", { key: live, body: { template_slug: slug, to } });
    expect(res.status).toBe(202);
    return res.body as { id: string; status: string; error: string | null };
  };
  const email = async (id: string) => (await t.call("GET", `/api/v1/emails/${id}`, { key: live })).body as EmailJson;
  const settled = (id: string, attempts = 400) => eventually(() => email(id), (e) => e.status !== "queued" && e.status !== "deferred", attempts);
  const suppressions = (query = "", key = live) => allItems<SuppressionJson>((path) => t.call("GET", path, { key }), `/api/v1/suppressions${query}`);

  it("a 550 at RCPT bounces the email hard, moves the subscriber to bounced and suppresses the address: the next campaign and receipt skip it with the reason", async () => {
    const hard = addr("hard");
    const hardId = await subscriber(hard, { tags: ["news"] });
    sink.rcptReplies.set(hard, { code: 550, text: `5.1.1 <${hard}>: Recipient address rejected: User unknown` });
    const sent = await send("receipt", hard);
    const bounced = await settled(sent.id);
    expect(bounced).toMatchObject({ status: "bounced", bounce: { type: "hard", diagnostic: "550 5.1.1 <recipient>: Recipient address rejected: User unknown" }, sent_at: null });
    expect(bounced.error).toBe("recipient_rejected: 550 5.1.1 <recipient>: Recipient address rejected: User unknown");
    expect(bounced.history.map((c) => c.status)).toEqual(["queued", "bounced"]);

    // The subscribers service is told through delivery's outbox: the subscriber moves, the address is listed.
    const moved = await eventually(async () => (await t.call("GET", `/api/v1/subscribers/${hardId}`, { key: live })).body, (s) => s.status === "bounced");
    expect(moved.status).toBe("bounced");
    const listed = await eventually(() => suppressions("?reason=hard_bounce"), (list) => list.some((s) => s.email === hard));
    expect(listed.find((s) => s.email === hard)).toMatchObject({ reason: "hard_bounce", source: "delivery", email_id: sent.id });
    const trail = (await t.call("GET", `/api/v1/subscribers/${hardId}/events`, { key: live })).body.items as Array<{ type: string; data: Record<string, unknown> }>;
    expect(trail.map((e) => e.type)).toEqual(expect.arrayContaining(["subscriber.status_changed", "suppression.added"]));

    // Transactional mail to it is not sent either: suppressed with the reason, never at the relay.
    const receipt = await send("receipt", hard);
    expect(receipt).toMatchObject({ status: "suppressed", error: "recipient_bounced" });
    expect(sink.to(hard).filter((m) => m.accepted)).toHaveLength(0);
    // Unless the template says its mail must reach them anyway (transactional only).
    const marketingOverride = await t.call("POST", "/api/v1/templates", {
      key: live,
      body: { name: "x", subject: "x", category: "marketing", mjml_content: MJML, ignore_suppressions: ["hard_bounce"] },
    });
    expect([marketingOverride.status, marketingOverride.body.code]).toEqual([400, "validation_failed"]);
    const reset = await t.call("POST", "/api/v1/templates", {
      key: live,
      body: { name: "Reset", slug: "reset", subject: "Reset", category: "transactional", mjml_content: MJML, ignore_suppressions: ["hard_bounce"] },
    });
    expect([reset.status, reset.body.ignore_suppressions]).toEqual([201, ["hard_bounce"]]);
    sink.rcptReplies.delete(hard);
    expect((await settled((await send("reset", hard)).id)).status).toBe("sent");
    expect(sink.to(hard).filter((m) => m.accepted)).toHaveLength(1);

    // A campaign: the bounced subscriber is no longer in the audience; an address suppressed by hand is
    // skipped with its reason, as an email record `suppressed`.
    const fine = addr("fine");
    const manual = addr("manual");
    await subscriber(fine, { tags: ["news"] });
    await subscriber(manual, { tags: ["news"] });
    expect((await t.call("POST", "/api/v1/suppressions", { key: live, body: { email: manual, reason: "manual" } })).status).toBe(201);
    const created = await t.call("POST", "/api/v1/campaigns", { key: live, body: { name: "News", template_id: templateIds.news, tag_filter: { include_tags: ["news"], match: "any" } } });
    expect(created.status).toBe(201);
    expect((await t.call("POST", `/api/v1/campaigns/${created.body.id}/send`, { key: live })).body.total_recipients).toBe(2);
    const done = await eventually(async () => (await t.call("GET", `/api/v1/campaigns/${created.body.id}`, { key: live })).body, (c) => c.status === "sent", 400);
    expect(done.counts).toMatchObject({ total: 2, sent: 1, skipped: 1, skipped_by_reason: { suppressed: 1 } });
    const emails = await allItems<EmailJson>((path) => t.call("GET", path, { key: live }), "/api/v1/emails");
    expect(emails.filter((e) => e.to === manual).map((e) => [e.status, e.error])).toEqual([["suppressed", "recipient_suppressed"]]);
    expect(sink.to(manual)).toHaveLength(0);
    expect(sink.to(fine).filter((m) => m.accepted)).toHaveLength(1);
  }, 60_000);

  it("a campaign's mail that bounces hard: the row failed, the email bounced, the subscriber bounced and listed", async () => {
    expect((await t.call("POST", "/api/v1/tags", { key: live, body: { name: "promo" } })).status).toBe(201);
    const gone = addr("campaign-gone");
    const kept = addr("campaign-kept");
    const goneId = await subscriber(gone, { tags: ["promo"] });
    await subscriber(kept, { tags: ["promo"] });
    sink.rcptReplies.set(gone, { code: 550, text: "5.1.1 User unknown" });
    const created = await t.call("POST", "/api/v1/campaigns", { key: live, body: { name: "Promo", template_id: templateIds.news, tag_filter: { include_tags: ["promo"], match: "any" } } });
    expect((await t.call("POST", `/api/v1/campaigns/${created.body.id}/send`, { key: live })).body.total_recipients).toBe(2);
    const done = await eventually(async () => (await t.call("GET", `/api/v1/campaigns/${created.body.id}`, { key: live })).body, (c) => c.status === "sent" && c.counts.failed === 1, 400);
    expect(done.counts).toMatchObject({ total: 2, sent: 1, failed: 1, skipped: 0 });
    const emails = await allItems<EmailJson>((path) => t.call("GET", path, { key: live }), "/api/v1/emails");
    expect(emails.filter((e) => e.to === gone).map((e) => [e.status, e.bounce?.type])).toEqual([["bounced", "hard"]]);
    expect((await eventually(async () => (await t.call("GET", `/api/v1/subscribers/${goneId}`, { key: live })).body, (b) => b.status === "bounced")).status).toBe("bounced");
    expect((await eventually(() => suppressions("?reason=hard_bounce"), (list) => list.some((e) => e.email === gone))).some((e) => e.email === gone)).toBe(true);
    sink.rcptReplies.delete(gone);
  }, 60_000);

  it("a 450 that recovers: deferred, then sent; other mail goes meanwhile, not held behind it", async () => {
    const slow = addr("slow");
    const other = addr("other");
    sink.dataReplies.set(slow, [
      { code: 450, text: "4.2.1 Mailbox busy, try later" },
      { code: 450, text: "4.2.1 Mailbox busy, try later" },
    ]);
    const first = await send("receipt", slow);
    const deferred = await eventually(() => email(first.id), (e) => e.status === "deferred");
    expect(deferred).toMatchObject({ status: "deferred", bounce: null });
    expect(deferred.next_attempt_at).not.toBeNull();
    // Sent while the deferred one waits for its next attempt.
    const second = await send("receipt", other);
    const otherSent = await settled(second.id);
    expect(otherSent.status).toBe("sent");
    const recovered = await settled(first.id);
    expect(recovered.status).toBe("sent");
    expect(Date.parse(otherSent.sent_at!)).toBeLessThan(Date.parse(recovered.sent_at!));
    expect(recovered.history.map((c) => [c.status, c.detail])).toEqual([
      ["queued", ""],
      ["deferred", "450 4.2.1 Mailbox busy, try later"],
      ["sent", ""],
    ]);
    expect(recovered.next_attempt_at).toBeNull();
    expect(sink.to(slow).filter((m) => m.accepted)).toHaveLength(1);
  }, 60_000);

  it("a 452 until the retry window ends bounces soft; one soft bounce does not suppress the address", async () => {
    const full = addr("full");
    const fullId = await subscriber(full);
    sink.dataReplies.set(full, Array.from({ length: 100 }, () => ({ code: 452, text: "4.2.2 Mailbox full" })));
    const sent = await send("receipt", full);
    const gaveUp = await settled(sent.id, 600);
    expect(gaveUp).toMatchObject({ status: "bounced", bounce: { type: "soft", diagnostic: "452 4.2.2 Mailbox full" }, error: "attempts_exhausted: 452 4.2.2 Mailbox full" });
    expect(gaveUp.history.map((c) => c.status)).toEqual(["queued", "deferred", "bounced"]);
    expect(sink.to(full).length).toBeGreaterThanOrEqual(2);
    // One soft bounce is below SOFT_BOUNCE_LIMIT (3 in 30 days): still active, not listed.
    expect((await t.call("GET", `/api/v1/subscribers/${fullId}`, { key: live })).body.status).toBe("active");
    expect((await suppressions()).some((s) => s.email === full)).toBe(false);
    sink.dataReplies.delete(full);
  }, 60_000);

  it("suppression API: add, list, delete with a reason (audited); bad input is a 400 that changes nothing; another account sees none of it", async () => {
    const person = addr("person");
    const personId = await subscriber(person);
    const added = await t.call("POST", "/api/v1/suppressions", { key: live, body: { email: person, reason: "manual" } });
    expect(added.status).toBe(201);
    expect(added.body).toMatchObject({ email: person, reason: "manual", source: "api", email_id: null });
    const again = await t.call("POST", "/api/v1/suppressions", { key: live, body: { email: person.toUpperCase(), reason: "manual" } });
    expect([again.status, again.body.id]).toEqual([200, added.body.id]);
    expect((await suppressions("?reason=manual")).filter((s) => s.email === person)).toHaveLength(1);

    // Marketing mail no longer goes; transactional mail does.
    expect(await send("news", person)).toMatchObject({ status: "suppressed", error: "recipient_suppressed" });
    expect((await settled((await send("receipt", person)).id)).status).toBe("sent");

    const before = await suppressions();
    for (const [body, field] of [
      [{ email: "not-an-address", reason: "manual" }, "email"],
      [{ email: addr("x"), reason: "hard_bounce" }, "reason"],
      [{ email: addr("x") }, "reason"],
      [{ email: addr("x"), reason: "manual", source: "api" }, "source"],
    ] as const) {
      const res = await t.call("POST", "/api/v1/suppressions", { key: live, body });
      expect([res.status, res.body.code]).toEqual([400, "validation_failed"]);
      expect(JSON.stringify(res.body.errors)).toContain(field);
    }
    const noReason = await t.call("DELETE", `/api/v1/suppressions/${encodeURIComponent(person)}`, { key: live });
    expect([noReason.status, noReason.body.code]).toEqual([400, "validation_failed"]);
    const blank = await t.call("DELETE", `/api/v1/suppressions/${encodeURIComponent(person)}?reason=${encodeURIComponent("   ")}`, { key: live });
    expect([blank.status, blank.body.code]).toEqual([400, "validation_failed"]);
    expect(await suppressions()).toEqual(before);

    // Another account (and this account's test mode) sees nothing and removes nothing.
    const other = await t.call("POST", "/admin/v1/accounts", { admin: true, body: { name: "other" } });
    const otherKey = (await t.call("POST", `/admin/v1/accounts/${other.body.id}/api-keys`, { admin: true, body: { mode: "live" } })).body.key;
    expect(await suppressions("", otherKey)).toEqual([]);
    expect(await suppressions("", t.key)).toEqual([]);
    expect((await t.call("DELETE", `/api/v1/suppressions/${encodeURIComponent(person)}?reason=mistake`, { key: otherKey })).status).toBe(404);
    expect((await t.call("DELETE", `/api/v1/suppressions/${encodeURIComponent(person)}?reason=mistake`, { key: t.key })).status).toBe(404);

    const removed = await t.call("DELETE", `/api/v1/suppressions/${encodeURIComponent(person)}?reason=${encodeURIComponent("added by mistake")}`, { key: live });
    expect(removed.status).toBe(200);
    expect(removed.body).toMatchObject({ email: person, reason: "manual" });
    expect((await suppressions()).some((s) => s.email === person)).toBe(false);
    expect((await t.call("DELETE", `/api/v1/suppressions/${encodeURIComponent(person)}?reason=again`, { key: live })).status).toBe(404);
    const trail = (await t.call("GET", `/api/v1/subscribers/${personId}/events`, { key: live })).body.items as Array<{ type: string; source: string | null; data: Record<string, unknown> }>;
    expect(trail.find((e) => e.type === "suppression.removed")).toMatchObject({ source: "api", data: { suppression_reason: "manual", reason: "added by mistake" } });
    expect((await settled((await send("news", person)).id)).status).toBe("sent");
  }, 60_000);

  it("transactional mail to an unsubscribed subscriber is sent; marketing mail is suppressed with the reason", async () => {
    const left = addr("left");
    await subscriber(left, { status: "unsubscribed" });
    expect((await settled((await send("receipt", left)).id)).status).toBe("sent");
    const news = await send("news", left);
    expect(news).toMatchObject({ status: "suppressed", error: "recipient_unsubscribed" });
    expect((await email(news.id)).history).toEqual([{ status: "suppressed", at: expect.any(String), detail: "recipient_unsubscribed" }]);
  }, 60_000);
});
