import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import { delivery, events } from "@emailsvc/proto";
import { readError } from "@emailsvc/errors";
import { newId } from "@emailsvc/ids";
import { tenantKey, type CallContext } from "@emailsvc/tenancy";
import type { EmailDoc, SandboxMessageDoc } from "../src/storage/documents.js";
import { as, sleep, smtpProviders, startHarness, tenant, waitFor, type Harness, type StoreKind } from "./harness.js";
import { SmtpSink } from "@emailsvc/testing";

// GDPR erasure: subscriber.deleted (published on the bus as the subscribers
// service does) erases the emails linked to that subscriber.

const WELCOME = { slug: "welcome", subject: "Hi {{name}}", html: "<p>Hello {{name}}, plan {{metadata.plan}}</p>" };

describe.each<StoreKind>(["embedded", "mongodb"])("erasure on subscriber.deleted, %s storage", (kind) => {
  let h: Harness;
  let sink: SmtpSink;

  beforeAll(async () => {
    sink = await new SmtpSink().start();
    h = await startHarness({ store: kind, providers: smtpProviders(sink.url()), from: "Acme <hello@acme.example>" });
  });
  afterAll(async () => {
    await h?.close();
    await sink?.close();
  });

  const emails = () => h.store.collection<EmailDoc>("emails");
  const sandbox = () => h.store.collection<SandboxMessageDoc>("sandbox_messages");

  async function publishDeleted(call: CallContext, subscriberId: string): Promise<string> {
    const eventId = newId("evt");
    const meta = create(events.EventMetaSchema, { eventId, accountId: call.tenant.accountId, mode: call.tenant.mode, occurredAt: timestampFromMs(Date.now()) });
    const value = toBinary(events.SubscriberDeletedSchema, create(events.SubscriberDeletedSchema, { meta, subscriberId }));
    await h.bus.publish("subscriber.deleted", [{ key: subscriberId, value, headers: { "event-id": eventId, "event-type": "subscriber.deleted" } }]);
    return eventId;
  }

  async function settled(call: CallContext, id: string) {
    return waitFor(async () => {
      const e = (await h.client.getEmail({ id }, as(call))).email!;
      return e.status === delivery.EmailStatus.QUEUED || e.status === delivery.EmailStatus.DEFERRED ? undefined : e;
    }, `email ${id} settled`);
  }

  async function send(call: CallContext, to: string, extra: { idempotencyKey?: string } = {}) {
    return (await h.client.sendEmail({ templateSlug: "welcome", to, variables: { name: "Secret-Name" }, ...extra }, as(call))).email!;
  }

  /** A stored document's text, to look for personal data. */
  const text = (doc: unknown) => JSON.stringify(doc);

  it("scrubs a subscriber's sent (SMTP) and sandboxed emails and deletes the sandbox messages; other subscribers and tenants keep theirs; a repeat changes nothing", async () => {
    const live = tenant("live");
    const test = tenant("test", live.tenant.accountId);
    const other = tenant("test");
    for (const t of [live, test, other]) h.templates.put(t, WELCOME);
    const gone = h.subscribers.put(test, "Erase.Me@example.com", { plan: "gold" });
    h.subscribers.put(live, "erase.me@example.com", {}, gone); // the same id in the account's other mode: another tenant
    const liveGone = h.subscribers.put(live, "live.erase@example.com");
    const keep = h.subscribers.put(test, "keep.me@example.com");
    h.subscribers.put(other, "erase.me@example.com", {}, gone); // the same id under another account

    const sandboxed = await send(test, "Erase.Me@example.com", { idempotencyKey: "order-1" });
    const sandboxed2 = await send(test, "erase.me@EXAMPLE.com");
    const overSmtp = await send(live, "live.erase@example.com", { idempotencyKey: "order-live" });
    const kept = await send(test, "keep.me@example.com");
    const othersMode = await send(live, "erase.me@example.com");
    const othersAccount = await send(other, "erase.me@example.com");
    const all: Array<[CallContext, delivery.Email]> = [
      [test, sandboxed], [test, sandboxed2], [live, overSmtp], [test, kept], [live, othersMode], [other, othersAccount],
    ];
    for (const [t, e] of all) expect((await settled(t, e.id)).status).toBe(delivery.EmailStatus.SENT);
    // The link is stored (ids only) and the subscriber's metadata was rendered, never stored.
    expect((await emails().findOne({ _id: sandboxed.id }))!.subscriber_id).toBe(gone);
    expect((await h.client.getSandboxMessage({ emailId: sandboxed.id }, as(test))).message!.html).toContain("plan gold");
    expect(text(await emails().findOne({ _id: sandboxed.id }))).not.toContain("gold");
    const before = new Map(await Promise.all(all.map(async ([t, e]) => [e.id, (await h.client.getEmail({ id: e.id }, as(t))).email!] as const)));

    h.subscribers.remove(test, "erase.me@example.com");
    h.subscribers.remove(live, "live.erase@example.com");
    await publishDeleted(test, gone);
    await publishDeleted(live, liveGone);

    for (const [t, e] of [[test, sandboxed], [test, sandboxed2], [live, overSmtp]] as const) {
      const erased = await waitFor(async () => {
        const got = (await h.client.getEmail({ id: e.id }, as(t))).email!;
        return got.to === "" ? got : undefined;
      }, `email ${e.id} erased`);
      // Status, timestamps and ids stay for the account's statistics; the caller's key goes (it may name the person).
      const was = before.get(e.id)!;
      expect(erased).toMatchObject({ status: delivery.EmailStatus.SENT, messageId: was.messageId, attempts: was.attempts, templateId: was.templateId, idempotencyKey: "" });
      expect(erased.sentAt).toEqual(was.sentAt);
      expect(erased.queuedAt).toEqual(was.queuedAt);
      const stored = (await emails().findOne({ _id: e.id }))!;
      expect(stored).toMatchObject({ to: "", to_key: `erased:${e.id}`, variables_json: "{}", idempotency_key: "", idem_key: `none:${e.id}`, request_hash: "" });
      expect(stored.subscriber_id).toBeUndefined();
      expect(stored.subject).toBeUndefined();
      expect(text(stored).toLowerCase()).not.toMatch(/erase\.me|live\.erase|secret-name|order-|sub_/);
    }
    for (const id of [sandboxed.id, sandboxed2.id]) {
      const info = readError(await h.client.getSandboxMessage({ emailId: id }, as(test)).then(() => undefined, (err: unknown) => err));
      expect(info.code).toBe(Code.NotFound);
      expect(await sandbox().findOne({ _id: id })).toBeNull();
    }

    // Another subscriber, the same id in the account's other mode, and another account: untouched.
    for (const [t, e] of [[test, kept], [live, othersMode], [other, othersAccount]] as const) {
      expect((await h.client.getEmail({ id: e.id }, as(t))).email).toEqual(before.get(e.id));
    }
    for (const [t, e] of [[test, kept], [other, othersAccount]] as const) {
      expect((await h.client.getSandboxMessage({ emailId: e.id }, as(t))).message!.to).toBe(e.to);
    }

    // Published again (twice): nothing more is written or published.
    const snapshot = await Promise.all([sandboxed, sandboxed2, overSmtp].map((e) => emails().findOne({ _id: e.id })));
    const eventsBefore = h.received.length;
    await publishDeleted(test, gone);
    await publishDeleted(test, gone);
    await publishDeleted(live, liveGone);
    await sleep(500);
    expect(await Promise.all([sandboxed, sandboxed2, overSmtp].map((e) => emails().findOne({ _id: e.id })))).toEqual(snapshot);
    const emailEvents = h.received.slice(eventsBefore).filter((e) => e.topic !== "subscriber.deleted");
    expect(emailEvents).toEqual([]);
    expect(sink.to("live.erase@example.com").filter((m) => m.accepted)).toHaveLength(1);

    // The key was erased with the record: the same request again is a new email.
    const replay = await h.client.sendEmail({ templateSlug: "welcome", to: "Erase.Me@example.com", variables: { name: "Secret-Name" }, idempotencyKey: "order-1" }, as(test));
    expect(replay.replayed).toBe(false);
    expect(replay.email!.id).not.toBe(sandboxed.id);
    expect((await settled(test, replay.email!.id)).status).toBe(delivery.EmailStatus.SENT);
  });

  it("fails a queued email of an erased subscriber with `recipient_erased` (email.status published) and never sends it", async () => {
    const live = tenant("live");
    const test = tenant("test", live.tenant.accountId);
    for (const t of [live, test]) h.templates.put(t, WELCOME);
    const liveSub = h.subscribers.put(live, "queued.live@example.com");
    const testSub = h.subscribers.put(test, "queued.test@example.com");
    // SendEmail links the email; every lookup at send time then fails (subscribers
    // service down): the email is deferred, retried without end.
    h.subscribers.unavailableAfterFirst.add("queued.live@example.com");
    h.subscribers.unavailableAfterFirst.add("queued.test@example.com");
    const queuedLive = await send(live, "queued.live@example.com");
    const queuedTest = await send(test, "queued.test@example.com");
    try {
      await waitFor(async () => ((await emails().findOne({ _id: queuedLive.id }))!.attempts >= 2 ? true : undefined), "send attempts");
      expect((await emails().findOne({ _id: queuedLive.id }))!.subscriber_id).toBe(liveSub);
      expect((await h.client.getEmail({ id: queuedLive.id }, as(live))).email!.status).toBe(delivery.EmailStatus.DEFERRED);

      h.subscribers.remove(live, "queued.live@example.com");
      h.subscribers.remove(test, "queued.test@example.com");
      await publishDeleted(live, liveSub);
      await publishDeleted(test, testSub);
      for (const [t, e] of [[live, queuedLive], [test, queuedTest]] as const) {
        const failed = await settled(t, e.id);
        expect(failed).toMatchObject({ status: delivery.EmailStatus.FAILED, error: "recipient_erased", to: "" });
        expect(failed.failedAt).toBeDefined();
        expect(failed.sentAt).toBeUndefined();
        await waitFor(
          () => h.received.find((ev) => ev.topic === "email.status" && ev.key === e.id && fromBinary(events.EmailStatusChangedSchema, ev.value).status === "failed"),
          "email.status failed",
        );
      }
    } finally {
      h.subscribers.unavailableAfterFirst.clear();
    }
    // The subscribers service is back; the email's send requests come again: still nothing is sent.
    await sleep(800);
    expect(sink.to("queued.live@example.com")).toHaveLength(0);
    expect(await sandbox().findOne({ _id: queuedTest.id })).toBeNull();
    expect((await h.client.getEmail({ id: queuedLive.id }, as(live))).email!.status).toBe(delivery.EmailStatus.FAILED);
  });

  it("pages through many emails of one subscriber", async () => {
    const t = tenant("test");
    const subscriberId = newId("sub");
    const now = Date.now();
    const ids: string[] = [];
    for (let i = 0; i < 150; i++) {
      const id = newId("eml");
      ids.push(id);
      await emails().insertOne({
        _id: id, tenant: tenantKey(t.tenant), to: `many@example.com`, to_key: "many@example.com", subscriber_id: subscriberId,
        template_id: "tpl_x", template_slug: "welcome", template_version: 1, variables_json: '{"name":"Secret"}',
        idempotency_key: "", idem_key: `none:${id}`, request_hash: "h", status: "sent", provider: "sandbox", message_id: `<${id}@x>`,
        error: "", last_error: "", attempts: 1, transient_failures: 0, lease_until: 0, lease_token: "", queued_at: now, sent_at: now,
        failed_at: null, updated_at: now, version: 1, outbox: [], outbox_pending: false,
      });
      await sandbox().insertOne({ _id: id, tenant: tenantKey(t.tenant), from: "a@x.example", to: "many@example.com", subject: "s", body: { html: "h", text: "t", headers: {} }, captured_at: now });
    }
    await publishDeleted(t, subscriberId);
    // FerretDB/SQLite scans for every filter and applies updates one at a time: 150 scrubs take
    // seconds there, more under a full parallel test run; probe seldom so as not to add to it.
    await waitFor(
      async () => {
        await sleep(250);
        return (await emails().count({ tenant: tenantKey(t.tenant), to_key: "many@example.com" })) === 0 ? true : undefined;
      },
      "all erased",
      100_000,
    );
    expect(await sandbox().count({ tenant: tenantKey(t.tenant) })).toBe(0);
    expect(await emails().count({ tenant: tenantKey(t.tenant), variables_json: "{}", to: "" })).toBe(150);
  }, 130_000);
});
