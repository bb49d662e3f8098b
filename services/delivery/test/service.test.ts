import { fromBinary, type JsonObject } from "@bufbuild/protobuf";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import { DeliveryProblem, delivery, events } from "@emailsvc/proto";
import { readError } from "@emailsvc/errors";
import { newId } from "@emailsvc/ids";
import { tenantKey, type CallContext } from "@emailsvc/tenancy";
import type { EmailDoc } from "../src/storage/documents.js";
import { DeliveryStorage } from "../src/storage/repositories.js";
import { recordComplaint, recordLateBounce } from "../src/usecases/record-feedback.js";
import { as, smtpProviders, startHarness, tenant, waitFor, type Harness, type StoreKind } from "./harness.js";
import { SmtpSink } from "@emailsvc/testing";

const FROM = "Acme Billing <billing@acme.example>";
const WELCOME = {
  slug: "welcome",
  subject: "Welcome, {{name}}!",
  html: '<!doctype html><html><body><div><p>Hello {{name}},</p><p>Your code is <b>{{code}}</b>.</p><a href="https://acme.example/start?u={{name}}">Start</a></div></body></html>',
};

async function failure(promise: Promise<unknown>) {
  try {
    await promise;
  } catch (err) {
    return readError(err);
  }
  throw new Error("expected the call to fail");
}

describe.each<StoreKind>(["embedded", "mongodb"])("delivery service over gRPC on %s storage, EMAIL_PROVIDER=smtp", (kind) => {
  let h: Harness;
  let sink: SmtpSink;
  const addressed = (to: string) => sink.to(to);
  const acceptedFor = (to: string) => sink.to(to).filter((m) => m.accepted);

  beforeAll(async () => {
    sink = await new SmtpSink().start();
    h = await startHarness({
      store: kind,
      providers: smtpProviders(sink.url({ user: "relay-user", pass: "s3cr:et" })),
      from: FROM,
      // A "not now" is retried for a second and a half, then bounces soft.
      retry: { windowMs: 1500 },
    });
  });
  afterEach(() => {
    sink.dataReplies.clear();
    sink.rcptReplies.clear();
  });
  afterAll(async () => {
    await h?.close();
    await sink?.close();
  });

  async function sendAndSettle(call: CallContext, to: string, variables: JsonObject = { name: "Ada", code: "1234" }) {
    const { email } = await h.client.sendEmail({ templateSlug: "welcome", to, variables }, as(call));
    return waitFor(async () => {
      const got = (await h.client.getEmail({ id: email!.id }, as(call))).email!;
      return got.status === delivery.EmailStatus.QUEUED || got.status === delivery.EmailStatus.DEFERRED ? undefined : got;
    }, `email ${email!.id} settled`);
  }

  it("queues at once, then sends over SMTP with subject, HTML and text parts, Message-ID, From/To, variables filled and escaped", async () => {
    const t = tenant("live");
    const templateId = h.templates.put(t, WELCOME);
    const before = Date.now();
    const res = await h.client.sendEmail(
      { templateSlug: "welcome", to: "Ada.Lovelace@Example.com", variables: { name: "Ada <b>Lovelace</b>", code: "X-1" } },
      as(t),
    );
    expect(res.replayed).toBe(false);
    const queued = res.email!;
    expect(queued.id).toMatch(/^eml_[0-9a-z]{26}$/);
    expect(queued.status).toBe(delivery.EmailStatus.QUEUED);
    expect(queued.to).toBe("Ada.Lovelace@Example.com");
    expect(queued.templateId).toBe(templateId);
    expect(queued.templateSlug).toBe("welcome");
    expect(queued.templateVersion).toBe(1);
    expect(queued.provider).toBe("smtp");
    expect(timestampMs(queued.queuedAt!)).toBeGreaterThanOrEqual(before - 1000);
    expect(queued.sentAt).toBeUndefined();

    const sent = await waitFor(async () => {
      const e = (await h.client.getEmail({ id: queued.id }, as(t))).email!;
      return e.status === delivery.EmailStatus.SENT ? e : undefined;
    }, "sent");
    expect(sent.messageId).toBe(`<${queued.id}@acme.example>`);
    expect(sent.provider).toBe("smtp");
    expect(sent.attempts).toBe(1);
    expect(sent.error).toBe("");
    expect(timestampMs(sent.sentAt!)).toBeGreaterThanOrEqual(timestampMs(sent.queuedAt!));
    expect(sent.failedAt).toBeUndefined();

    const [arrived, ...more] = addressed("Ada.Lovelace@Example.com");
    expect(more).toHaveLength(0);
    expect(arrived!.accepted).toBe(true);
    expect(arrived!.user).toBe("relay-user"); // AUTH with the credentials of SMTP_URL
    expect(arrived!.envelope.from).toBe("billing@acme.example");
    const mail = arrived!.parsed;
    expect(mail.subject).toBe("Welcome, Ada <b>Lovelace</b>!");
    expect(mail.messageId).toBe(`<${queued.id}@acme.example>`);
    expect(mail.from!.value[0]).toMatchObject({ name: "Acme Billing", address: "billing@acme.example" });
    const to = Array.isArray(mail.to) ? mail.to[0]! : mail.to!;
    // The SMTP provider writes the domain in lower case (domains compare case-insensitively); the local part is kept.
    expect(to.value[0]!.address).toBe("Ada.Lovelace@example.com");
    expect(mail.html).toContain("Hello Ada &lt;b&gt;Lovelace&lt;/b&gt;,");
    expect(mail.html).toContain("<b>X-1</b>");
    expect(mail.html).not.toContain("<b>Lovelace</b>");
    expect(mail.html).not.toContain("{{");
    expect(mail.text).toContain("Hello Ada <b>Lovelace</b>,");
    expect(mail.text).toContain("Your code is X-1.");
    expect(arrived!.raw).toMatch(/Content-Type: multipart\/alternative/i);
    // No List-Unsubscribe on transactional mail.
    expect(mail.headers.has("list-unsubscribe")).toBe(false);

    // The template was resolved with the caller's tenant, and rendered with the pinned version.
    expect(h.templates.calls).toEqual(
      expect.arrayContaining([
        { tenant: tenantKey(t.tenant), template: "welcome", version: 0 },
        { tenant: tenantKey(t.tenant), template: templateId, version: 1 },
      ]),
    );
  });

  it("sends with the template version the email was queued with", async () => {
    const t = tenant("live");
    h.templates.put(t, { slug: "welcome", subject: "v1 {{name}}", html: "<p>one {{name}}</p>" });
    const first = await sendAndSettle(t, "pin1@example.com");
    h.templates.put(t, { slug: "welcome", subject: "v2 {{name}}", html: "<p>two {{name}}</p>" });
    const second = await sendAndSettle(t, "pin2@example.com");
    expect(first.templateVersion).toBe(1);
    expect(second.templateVersion).toBe(2);
    expect(addressed("pin1@example.com")[0]!.parsed.subject).toBe("v1 Ada");
    expect(addressed("pin2@example.com")[0]!.parsed.subject).toBe("v2 Ada");
  });

  it("sends a test-mode key's mail to the sandbox even with EMAIL_PROVIDER=smtp, and shows the whole message", async () => {
    const t = tenant("test");
    h.templates.put(t, WELCOME);
    const sent = await sendAndSettle(t, "sandboxed@example.com", { name: "Grace <i>", code: "77" });
    expect(sent.status).toBe(delivery.EmailStatus.SENT);
    expect(sent.provider).toBe("sandbox");
    expect(sent.messageId).toBe(`<${sent.id}@acme.example>`);
    expect(addressed("sandboxed@example.com")).toHaveLength(0);

    const { message } = await h.client.getSandboxMessage({ emailId: sent.id }, as(t));
    expect(message!.emailId).toBe(sent.id);
    expect(message!.from).toBe(FROM);
    expect(message!.to).toBe("sandboxed@example.com");
    expect(message!.subject).toBe("Welcome, Grace <i>!");
    expect(message!.html).toContain("Hello Grace &lt;i&gt;,");
    expect(message!.text).toContain("Hello Grace <i>,");
    expect(message!.headers).toMatchObject({ "Message-ID": `<${sent.id}@acme.example>`, From: FROM, To: "sandboxed@example.com" });
    expect(message!.capturedAt).toBeDefined();

    // Not sandboxed (sent over SMTP), unknown, or another tenant's: 404.
    const live = tenant("live");
    h.templates.put(live, WELCOME);
    const overSmtp = await sendAndSettle(live, "live-not-sandboxed@example.com");
    for (const [call, id] of [
      [live, overSmtp.id],
      [t, newId("eml")],
      [tenant("test"), sent.id],
      [tenant("test", t.tenant.accountId), overSmtp.id],
    ] as const) {
      const info = await failure(h.client.getSandboxMessage({ emailId: id }, as(call)));
      expect(info.code).toBe(Code.NotFound);
    }
  });

  it("answers a repeated idempotency key with the original email and sends nothing more; another body is a 409", async () => {
    const t = tenant("live");
    h.templates.put(t, WELCOME);
    const body = { templateSlug: "welcome", to: "idem@example.com", variables: { name: "Ada", code: "1", nested: { b: 2, a: [1, 2] } }, idempotencyKey: "order-42" };
    const first = await h.client.sendEmail(body, as(t));
    expect(first.replayed).toBe(false);
    expect(first.email!.idempotencyKey).toBe("order-42");
    // Same body, keys in another order: still the same request.
    const again = await h.client.sendEmail({ ...body, variables: { nested: { a: [1, 2], b: 2 }, code: "1", name: "Ada" } }, as(t));
    expect(again.replayed).toBe(true);
    expect(again.email!.id).toBe(first.email!.id);
    await waitFor(async () => ((await h.client.getEmail({ id: first.email!.id }, as(t))).email!.status === delivery.EmailStatus.SENT ? true : undefined), "sent");
    const later = await h.client.sendEmail(body, as(t));
    expect(later.replayed).toBe(true);
    expect(later.email!.status).toBe(delivery.EmailStatus.SENT);

    const reused = await failure(h.client.sendEmail({ ...body, variables: { name: "Bob", code: "1" } }, as(t)));
    expect(reused.code).toBe(Code.AlreadyExists);
    expect(reused.errorCode).toBe("idempotency_key_reused");
    expect(reused.existingId).toBe(first.email!.id);
    const otherRecipient = await failure(h.client.sendEmail({ ...body, to: "other@example.com" }, as(t)));
    expect(otherRecipient.errorCode).toBe("idempotency_key_reused");

    // The key is the tenant's: another tenant (or mode) may use it for its own email.
    const other = tenant("live");
    h.templates.put(other, WELCOME);
    const theirs = await h.client.sendEmail(body, as(other));
    expect(theirs.replayed).toBe(false);
    expect(theirs.email!.id).not.toBe(first.email!.id);

    await new Promise((r) => setTimeout(r, 300));
    expect((await h.client.listEmails({}, as(t))).emails).toHaveLength(1);
    await waitFor(() => (acceptedFor("idem@example.com").length >= 2 ? true : undefined), "both tenants' mail");
    await new Promise((r) => setTimeout(r, 200));
    // One message per tenant, never a second for the replays.
    expect(acceptedFor("idem@example.com")).toHaveLength(2);
  });

  it("makes one email of 5 concurrent requests with one key, and sends it once", async () => {
    const t = tenant("live");
    h.templates.put(t, WELCOME);
    const body = { templateSlug: "welcome", to: "race@example.com", variables: { name: "R", code: "9" }, idempotencyKey: `race-${newId("k")}` };
    const results = await Promise.all(Array.from({ length: 5 }, () => h.client.sendEmail(body, as(t))));
    const ids = new Set(results.map((r) => r.email!.id));
    expect(ids.size).toBe(1);
    expect(results.filter((r) => !r.replayed)).toHaveLength(1);
    const [id] = [...ids];
    await waitFor(async () => ((await h.client.getEmail({ id: id! }, as(t))).email!.status === delivery.EmailStatus.SENT ? true : undefined), "sent");
    await new Promise((r) => setTimeout(r, 300));
    expect(addressed("race@example.com")).toHaveLength(1);
    expect((await h.client.listEmails({}, as(t))).emails).toHaveLength(1);
  });

  it("lets emails without a key never collide", async () => {
    const t = tenant("live");
    h.templates.put(t, WELCOME);
    const a = await h.client.sendEmail({ templateSlug: "welcome", to: "nokey@example.com", variables: { name: "A" } }, as(t));
    const b = await h.client.sendEmail({ templateSlug: "welcome", to: "nokey@example.com", variables: { name: "A" } }, as(t));
    expect(a.email!.id).not.toBe(b.email!.id);
    expect(b.replayed).toBe(false);
    expect(a.email!.idempotencyKey).toBe("");
  });

  it("defers a transient failure (451), retries it with backoff, then sends once", async () => {
    const t = tenant("live");
    h.templates.put(t, WELCOME);
    const later = { code: 451, text: "4.3.0 Temporary local problem, try later" };
    sink.dataReplies.set("flaky@example.com", [later, later]);
    const sent = await sendAndSettle(t, "flaky@example.com");
    expect(sent.status).toBe(delivery.EmailStatus.SENT);
    expect(sent.attempts).toBe(3);
    expect(sent.error).toBe("");
    expect(sent.bounce).toBeUndefined();
    // queued -> deferred (with the relay's reply) -> sent, each with its time, in order.
    expect(sent.history.map((c) => [c.status, c.detail])).toEqual([
      [delivery.EmailStatus.QUEUED, ""],
      [delivery.EmailStatus.DEFERRED, "451 4.3.0 Temporary local problem, try later"],
      [delivery.EmailStatus.SENT, ""],
    ]);
    const times = sent.history.map((c) => timestampMs(c.at!));
    expect([...times].sort((a, b) => a - b)).toEqual(times);
    await waitFor(
      () => h.received.find((e) => e.topic === "email.status" && e.key === sent.id && fromBinary(events.EmailStatusChangedSchema, e.value).status === "deferred"),
      "email.status deferred",
    );
    const arrived = addressed("flaky@example.com");
    expect(arrived).toHaveLength(3);
    expect(arrived.filter((m) => m.accepted)).toHaveLength(1);
    // Every attempt carried the same Message-ID.
    expect(new Set(arrived.map((m) => m.parsed.messageId))).toEqual(new Set([`<${sent.id}@acme.example>`]));
  });

  it("bounces soft when the retry window ends, with the last reply", async () => {
    const t = tenant("live");
    h.templates.put(t, WELCOME);
    sink.dataReplies.set("full@example.com", Array.from({ length: 500 }, () => ({ code: 452, text: "4.2.2 Mailbox full" })));
    const failed = await sendAndSettle(t, "full@example.com");
    expect(failed.status).toBe(delivery.EmailStatus.BOUNCED);
    expect(failed.bounce).toMatchObject({ type: delivery.BounceType.SOFT, diagnostic: "452 4.2.2 Mailbox full" });
    expect(failed.attempts).toBeGreaterThanOrEqual(2);
    expect(failed.error).toBe("attempts_exhausted: 452 4.2.2 Mailbox full");
    expect(failed.failureReason).toBe(delivery.FailureReason.ATTEMPTS_EXHAUSTED);
    expect(failed.sentAt).toBeUndefined();
    expect(failed.failedAt).toBeDefined();
    expect(failed.history.map((c) => c.status)).toEqual([delivery.EmailStatus.QUEUED, delivery.EmailStatus.DEFERRED, delivery.EmailStatus.BOUNCED]);
    expect(acceptedFor("full@example.com")).toHaveLength(0);
    await waitFor(() => h.subscribers.problems.find((p) => p.emailId === failed.id && p.problem === DeliveryProblem.SOFT_BOUNCE), "soft bounce reported");
    sink.dataReplies.clear();
  });

  it("takes a complaint and a late bounce about sent mail: once each, with the status, its history, the event and the report to the subscribers service", async () => {
    const t = tenant("live");
    h.templates.put(t, WELCOME);
    const scope = new DeliveryStorage(h.store).forTenant(tenantKey(t.tenant));
    const deps = { relay: h.service.relay, now: Date.now };
    const statusEvents = (id: string) =>
      h.received.filter((e) => e.topic === "email.status" && e.key === id).map((e) => fromBinary(events.EmailStatusChangedSchema, e.value));

    const spam = await sendAndSettle(t, "annoyed@example.com");
    expect(spam.status).toBe(delivery.EmailStatus.SENT);
    expect(await recordComplaint(deps, scope, spam.id)).toBe(true);
    expect(await recordComplaint(deps, scope, spam.id)).toBe(false);
    const complained = (await h.client.getEmail({ id: spam.id }, as(t))).email!;
    expect(complained.status).toBe(delivery.EmailStatus.COMPLAINED);
    expect(complained.history.map((c) => c.status)).toEqual([delivery.EmailStatus.QUEUED, delivery.EmailStatus.SENT, delivery.EmailStatus.COMPLAINED]);
    await waitFor(() => statusEvents(spam.id).find((e) => e.status === "complained"), "email.status complained");
    expect(h.subscribers.problems.filter((p) => p.emailId === spam.id)).toEqual([
      { tenant: tenantKey(t.tenant), email: "annoyed@example.com", problem: DeliveryProblem.COMPLAINT, emailId: spam.id },
    ]);
    // A bounce does not follow a complaint; nor does anything touch another tenant's email.
    expect(await recordLateBounce(deps, scope, spam.id, { type: "hard", diagnostic: "550 5.1.1 <recipient>: gone" })).toBe(false);
    const other = new DeliveryStorage(h.store).forTenant(tenantKey(tenant("live").tenant));
    const late = await sendAndSettle(t, "moved.away@example.com");
    expect(await recordComplaint(deps, other, late.id)).toBe(false);

    expect(await recordLateBounce(deps, scope, late.id, { type: "hard", diagnostic: "550 5.1.1 <recipient>: gone" })).toBe(true);
    const bounced = (await h.client.getEmail({ id: late.id }, as(t))).email!;
    expect(bounced).toMatchObject({ status: delivery.EmailStatus.BOUNCED, error: "recipient_rejected: 550 5.1.1 <recipient>: gone", bounce: { type: delivery.BounceType.HARD } });
    await waitFor(() => statusEvents(late.id).find((e) => e.status === "bounced" && e.bounceType === "hard"), "email.status bounced");
    expect(h.subscribers.problems.filter((p) => p.emailId === late.id).map((p) => p.problem)).toEqual([DeliveryProblem.HARD_BOUNCE]);
  });

  it("bounces hard at once on a permanent rejection (550), with the server's reason and without the address", async () => {
    const t = tenant("live");
    h.templates.put(t, WELCOME);
    sink.rcptReplies.set("nobody@example.com", { code: 550, text: "5.1.1 <nobody@example.com>: Recipient address rejected: User unknown" });
    const failed = await sendAndSettle(t, "nobody@example.com");
    expect(failed.status).toBe(delivery.EmailStatus.BOUNCED);
    expect(failed.bounce).toMatchObject({ type: delivery.BounceType.HARD, diagnostic: "550 5.1.1 <recipient>: Recipient address rejected: User unknown" });
    expect(failed.history.map((c) => [c.status, c.detail])).toEqual([
      [delivery.EmailStatus.QUEUED, ""],
      [delivery.EmailStatus.BOUNCED, "550 5.1.1 <recipient>: Recipient address rejected: User unknown"],
    ]);
    expect(failed.attempts).toBe(1);
    expect(failed.error).toBe("recipient_rejected: 550 5.1.1 <recipient>: Recipient address rejected: User unknown");
    expect(timestampMs(failed.failedAt!)).toBeGreaterThanOrEqual(timestampMs(failed.queuedAt!));
    expect(addressed("nobody@example.com")).toHaveLength(0);
    const status = await waitFor(
      () => h.received.find((e) => e.topic === "email.status" && e.key === failed.id && fromBinary(events.EmailStatusChangedSchema, e.value).status === "bounced"),
      "email.status bounced",
    );
    expect(fromBinary(events.EmailStatusChangedSchema, status.value).bounceType).toBe("hard");
    // The subscribers service is told, by the email's tenant, before the event goes out (the outbox's effect).
    expect(h.subscribers.problems.filter((p) => p.emailId === failed.id)).toEqual([
      { tenant: tenantKey(t.tenant), email: "nobody@example.com", problem: DeliveryProblem.HARD_BOUNCE, emailId: failed.id },
    ]);
    expect(status.headers["event-type"]).toBe("email.status");
    // The reason is its own field, not read back from the text: on the stored email, the answer and the event.
    expect(failed.failureReason).toBe(delivery.FailureReason.RECIPIENT_REJECTED);
    expect(((await h.store.collection("emails").findOne({ _id: failed.id })) as EmailDoc | null)!.failure_reason).toBe("recipient_rejected");
    expect(fromBinary(events.EmailStatusChangedSchema, status.value)).toMatchObject({ reason: "recipient_rejected", failureReason: delivery.FailureReason.RECIPIENT_REJECTED });
  });

  it("reads the reason of an email failed before the reason had a field of its own from its error text", async () => {
    const t = tenant("live");
    const emails = h.store.collection("emails");
    const id = newId("eml");
    const now = Date.now();
    // As such an email was stored: everything but failure_reason.
    const older: Omit<EmailDoc, "failure_reason"> = {
      _id: id, tenant: tenantKey(t.tenant), to: "older@example.com", to_key: "older@example.com", subscriber_id: "", template_id: "tpl_x", template_slug: "welcome",
      template_version: 1, variables_json: "{}", idempotency_key: "", idem_key: `none:${id}`, request_hash: "", status: "failed", provider: "smtp", message_id: "",
      error: "message_rejected: 554 5.7.1 Message refused", last_error: "", attempts: 1, transient_failures: 0, lease_until: 0, lease_token: "",
      queued_at: now, sent_at: null, failed_at: now, updated_at: now, version: 1, outbox: [], outbox_pending: false,
    };
    await emails.insertOne(older);
    const read = (await h.client.getEmail({ id }, as(t))).email!;
    expect({ error: read.error, failureReason: read.failureReason }).toEqual({ error: "message_rejected: 554 5.7.1 Message refused", failureReason: delivery.FailureReason.MESSAGE_REJECTED });
  });

  it("fails mail of a version stored beyond the limits at once, naming the limit for operators, compiling the version once", async () => {
    const t = tenant("live");
    // As a templates database written before the limits holds it: 3,000 blocks deep.
    const deep = { slug: "welcome", subject: "Hi {{name}}", html: `<html><body>${"{{#if name}}".repeat(3000)}x${"{{/if}}".repeat(3000)}</body></html>` };
    const templateId = h.templates.put(t, deep);
    const settled = [];
    for (const to of ["deep1@example.com", "deep2@example.com", "deep3@example.com"]) settled.push(await sendAndSettle(t, to));
    for (const email of settled) {
      expect([email.status, email.attempts, email.error]).toEqual([delivery.EmailStatus.FAILED, 1, "template_render_failed"]);
      const stored = await h.store.collection("emails").findOne({ _id: email.id });
      expect(stored!.last_error).toMatch(new RegExp(`^template ${templateId} version 1 cannot be rendered: body line 1: blocks nested 3,000 deep; at most 32 `));
      expect(addressed(email.to)).toHaveLength(0);
    }
    // Fetched (and compiled) once: the rejection is remembered per version.
    expect(h.templates.calls.filter((c) => c.template === templateId && c.version === 1)).toHaveLength(1);
  });

  it("fails an email whose variables make the message too large, naming the limit for operators and no value", async () => {
    const t = tenant("live");
    h.templates.put(t, { slug: "welcome", subject: "Rows", html: "<html><body>{{#each rows}}{{#each ../rows}}<p>{{this}}</p>{{/each}}{{/each}}</body></html>" });
    // 120 + 120 × 120 iterations.
    const failed = await sendAndSettle(t, "rows@example.com", { rows: Array.from({ length: 120 }, (_, i) => `secret-${i}`) });
    expect([failed.status, failed.error]).toEqual([delivery.EmailStatus.FAILED, "template_render_failed"]);
    const stored = await h.store.collection("emails").findOne({ _id: failed.id });
    expect(stored!.last_error).toBe("template could not be rendered: more than 10,000 {{#each}} iterations in one message");
    expect(addressed("rows@example.com")).toHaveLength(0);
  });

  it("rejects bad input with a clear code, and stores and sends nothing", async () => {
    const t = tenant("live");
    h.templates.put(t, WELCOME);
    const owner = tenant("live");
    h.templates.put(owner, { ...WELCOME, slug: "owners-only" });
    const ok = { templateSlug: "welcome", to: "fine@example.com", variables: { name: "x" } };
    const cases: Array<[string, Parameters<typeof h.client.sendEmail>[0], Code, string]> = [
      ["invalid recipient", { ...ok, to: "not-an-address" }, Code.InvalidArgument, "validation_failed"],
      ["no recipient", { ...ok, to: "" }, Code.InvalidArgument, "validation_failed"],
      ["CR/LF in to", { ...ok, to: "victim@example.com\r\nBcc: all@example.com" }, Code.InvalidArgument, "validation_failed"],
      ["LF in to", { ...ok, to: "victim@example.com\n" }, Code.InvalidArgument, "validation_failed"],
      ["too long", { ...ok, to: `${"a".repeat(250)}@example.com` }, Code.InvalidArgument, "validation_failed"],
      ["unknown slug", { ...ok, templateSlug: "no-such-template" }, Code.NotFound, "template_not_found"],
      ["another tenant's slug", { ...ok, templateSlug: "owners-only" }, Code.NotFound, "template_not_found"],
      ["no slug", { ...ok, templateSlug: "" }, Code.InvalidArgument, "validation_failed"],
      ["variables too large", { ...ok, variables: { big: "x".repeat(70 * 1024) } }, Code.ResourceExhausted, "variables_too_large"],
      ["bad idempotency key", { ...ok, idempotencyKey: "x".repeat(256) }, Code.InvalidArgument, "validation_failed"],
      ["control char in key", { ...ok, idempotencyKey: "a\u0001b" }, Code.InvalidArgument, "validation_failed"],
    ];
    for (const [what, req, code, errorCode] of cases) {
      const info = await failure(h.client.sendEmail(req, as(t)));
      expect({ what, code: info.code, errorCode: info.errorCode }).toEqual({ what, code, errorCode });
    }
    const tooLarge = await failure(h.client.sendEmail({ ...ok, variables: { big: "x".repeat(70 * 1024) } }, as(t)));
    expect(tooLarge.fieldViolations[0]!.field).toBe("variables");
    // A bad request does not bind its idempotency key.
    const bound = await h.client.sendEmail({ ...ok, to: "fine@example.com", idempotencyKey: "after-bad" }, as(t));
    await failure(h.client.sendEmail({ ...ok, to: "bad", idempotencyKey: "after-bad2" }, as(t)));
    const retried = await h.client.sendEmail({ ...ok, to: "fine2@example.com", idempotencyKey: "after-bad2" }, as(t));
    expect(retried.replayed).toBe(false);
    // Without a tenant: unauthenticated.
    const anonymous = await failure(h.client.sendEmail(ok, { headers: {} }));
    expect(anonymous.code).toBe(Code.Unauthenticated);

    await new Promise((r) => setTimeout(r, 300));
    const stored = (await h.client.listEmails({}, as(t))).emails.map((e) => e.id).sort();
    expect(stored).toEqual([bound.email!.id, retried.email!.id].sort());
    expect(addressed("not-an-address")).toHaveLength(0);
    expect(sink.messages.some((m) => m.raw.includes("Bcc: all@example.com"))).toBe(false);
    expect((await h.client.listEmails({}, as(owner))).emails).toEqual([]);
  });

  it("answers each message of a batch (SendEmails) as SendEmail answers it alone, in its place, and stores only the good ones", async () => {
    const t = tenant("live");
    h.templates.put(t, WELCOME);
    const ok = { templateSlug: "welcome", to: "batch-ok@example.com", variables: { name: "x" } };
    const bad: Array<Parameters<typeof h.client.sendEmail>[0]> = [
      { ...ok, to: "not-an-address" },
      { ...ok, to: "victim@example.com\r\nBcc: all@example.com" },
      { ...ok, templateSlug: "no-such-template" },
      { ...ok, templateSlug: "" },
      { ...ok, variables: { big: "x".repeat(70 * 1024) } },
      { ...ok, idempotencyKey: "a\u0001b" },
      { ...ok, fromEmail: "news@unverified.example" },
    ];
    const alone = await Promise.all(bad.map((req) => failure(h.client.sendEmail(req, as(t)))));
    const { results } = await h.client.sendEmails({ messages: [ok, ...bad, { ...ok, to: "batch-ok2@example.com" }] }, as(t));
    expect(results).toHaveLength(bad.length + 2);
    expect(results[0]!.outcome.case).toBe("sent");
    expect(results[bad.length + 1]!.outcome.case).toBe("sent");
    bad.forEach((_, i) => {
      const outcome = results[i + 1]!.outcome;
      if (outcome.case !== "error") throw new Error(`message ${i + 1} was not refused`);
      expect({ i, code: outcome.value.grpcCode, errorCode: outcome.value.detail?.code, fields: outcome.value.detail?.fieldViolations.map((v) => v.field) }).toEqual({
        i,
        code: alone[i]!.code,
        errorCode: alone[i]!.errorCode,
        fields: alone[i]!.fieldViolations.map((v) => v.field),
      });
    });
    const stored = (await h.client.listEmails({}, as(t))).emails.filter((e) => e.to.startsWith("batch-ok"));
    expect(stored).toHaveLength(2);
    // More than 500 is refused whole.
    const tooMany = await failure(h.client.sendEmails({ messages: Array.from({ length: 501 }, () => ok) }, as(t)));
    expect([tooMany.code, tooMany.fieldViolations[0]?.field]).toEqual([Code.InvalidArgument, "messages"]);
  });

  it("answers 503 when the templates service fails, and stores nothing", async () => {
    const t = tenant("live");
    h.templates.put(t, WELCOME);
    h.templates.failWith = Code.Unavailable;
    try {
      const info = await failure(h.client.sendEmail({ templateSlug: "welcome", to: "x@example.com" }, as(t)));
      expect(info.code).toBe(Code.Unavailable);
      expect(info.errorCode).toBe("templates_unavailable");
    } finally {
      h.templates.failWith = undefined;
    }
    expect((await h.client.listEmails({}, as(t))).emails).toEqual([]);
  });

  it("publishes email.send.requested and email.status events with ids only, never the address or variables", async () => {
    const t = tenant("live");
    h.templates.put(t, WELCOME);
    const sent = await sendAndSettle(t, "private.person@example.com", { name: "Secret-Name-Value", code: "secret-code-123" });
    const mine = await waitFor(() => {
      const list = h.received.filter((e) => e.key === sent.id);
      return list.length >= 3 ? list : undefined;
    }, "three events");
    const requested = mine.filter((e) => e.topic === "email.send.requested");
    expect(requested).toHaveLength(1);
    const req = fromBinary(events.EmailSendRequestedSchema, requested[0]!.value);
    expect(req.emailId).toBe(sent.id);
    expect(req.meta).toMatchObject({ accountId: t.tenant.accountId, mode: "live" });
    expect(req.meta!.eventId).toMatch(/^evt_/);
    const statuses = mine.filter((e) => e.topic === "email.status").map((e) => fromBinary(events.EmailStatusChangedSchema, e.value));
    expect(statuses.map((s) => s.status)).toEqual(["queued", "sent"]);
    for (const s of statuses) expect(s.emailId).toBe(sent.id);
    for (const e of mine) {
      const bytes = Buffer.from(e.value).toString("latin1");
      for (const secret of ["private.person", "example.com", "Secret-Name-Value", "secret-code-123", "Welcome"]) {
        expect(bytes).not.toContain(secret);
        expect(JSON.stringify(e.headers)).not.toContain(secret);
      }
    }
  });

  it("lists a tenant's emails newest first with a cursor, and keeps tenants apart", async () => {
    const t = tenant("live");
    h.templates.put(t, WELCOME);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push((await h.client.sendEmail({ templateSlug: "welcome", to: `page${i}@example.com`, variables: { name: "p" } }, as(t))).email!.id);
    }
    const seen: string[] = [];
    let cursor = "";
    do {
      const page = await h.client.listEmails({ limit: 2, cursor }, as(t));
      expect(page.emails.length).toBeLessThanOrEqual(2);
      seen.push(...page.emails.map((e) => e.id));
      cursor = page.nextCursor;
    } while (cursor);
    expect(seen).toEqual([...ids].reverse());
    expect((await failure(h.client.listEmails({ cursor: "garbage!" }, as(t)))).code).toBe(Code.InvalidArgument);
    expect((await failure(h.client.listEmails({ limit: 501 }, as(t)))).code).toBe(Code.InvalidArgument);

    for (const other of [tenant("live"), tenant("test", t.tenant.accountId)]) {
      expect((await failure(h.client.getEmail({ id: ids[0]! }, as(other)))).code).toBe(Code.NotFound);
      expect((await h.client.listEmails({}, as(other))).emails).toEqual([]);
    }
  });
});

describe("delivery service with the default provider (sandbox)", () => {
  let h: Harness;
  const unsubscribeAsked: string[] = [];
  beforeAll(async () => {
    h = await startHarness({
      store: "embedded",
      // A stand-in for the signed links (domain/unsubscribe.ts): one URL per marketing email.
      unsubscribeUrl: ({ emailId }) => {
        unsubscribeAsked.push(emailId);
        return `https://prefs.example/unsubscribe?token=t-${emailId}`;
      },
    });
  });
  afterAll(async () => {
    await h?.close();
  });

  it("keeps live-mode mail in the sandbox too, with the default sender", async () => {
    const t = tenant("live");
    h.templates.put(t, WELCOME);
    const { email } = await h.client.sendEmail({ templateSlug: "welcome", to: "dev@example.com", variables: { name: "Dev" } }, as(t));
    expect(email!.provider).toBe("sandbox");
    const { message } = await waitFor(
      () => h.client.getSandboxMessage({ emailId: email!.id }, as(t)).catch(() => undefined),
      "sandbox message",
    );
    expect(message!.from).toBe("Email Platform <no-reply@localhost>");
    expect(message!.headers["Message-ID"]).toBe(`<${email!.id}@localhost>`);
    expect(message!.subject).toBe("Welcome, Dev!");
  });

  it("adds List-Unsubscribe and List-Unsubscribe-Post to marketing mail only", async () => {
    const t = tenant("test");
    h.templates.put(t, { slug: "news", subject: "News", html: "<p>News for {{email}}</p>", category: "marketing" });
    h.templates.put(t, { slug: "receipt", subject: "Receipt", html: "<p>Thanks</p>", category: "transactional" });
    const news = (await h.client.sendEmail({ templateSlug: "news", to: "reader@example.com" }, as(t))).email!;
    const receipt = (await h.client.sendEmail({ templateSlug: "receipt", to: "reader@example.com" }, as(t))).email!;
    const got = (id: string) => waitFor(() => h.client.getSandboxMessage({ emailId: id }, as(t)).catch(() => undefined), "sandbox message");
    const newsMessage = (await got(news.id)).message!;
    expect(newsMessage.headers["List-Unsubscribe"]).toBe(`<https://prefs.example/unsubscribe?token=t-${news.id}>`);
    expect(newsMessage.headers["List-Unsubscribe-Post"]).toBe("List-Unsubscribe=One-Click");
    expect(newsMessage.headers["List-Id"]).toBe(`<${t.tenant.accountId}.test.localhost>`);
    // The built-in `email` variable is the recipient.
    expect(newsMessage.html).toContain("News for reader@example.com");
    const receiptMessage = (await got(receipt.id)).message!;
    expect(receiptMessage.headers["List-Unsubscribe"]).toBeUndefined();
    expect(receiptMessage.headers["List-Id"]).toBeUndefined();
    expect(unsubscribeAsked).toEqual([news.id]);
  });

  it("fails an email whose template was deleted after it was queued", async () => {
    const t = tenant("test");
    h.templates.put(t, WELCOME);
    h.templates.deleteAfterSlugLookup = true;
    try {
      const { email } = await h.client.sendEmail({ templateSlug: "welcome", to: "gone@example.com" }, as(t));
      expect(email!.status).toBe(delivery.EmailStatus.QUEUED);
      const failed = await waitFor(async () => {
        const e = (await h.client.getEmail({ id: email!.id }, as(t))).email!;
        return e.status === delivery.EmailStatus.FAILED ? e : undefined;
      }, "failed");
      expect(failed.error).toBe("template_unavailable");
    } finally {
      h.templates.deleteAfterSlugLookup = false;
    }
  });
});
