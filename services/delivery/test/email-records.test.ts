import { encodeEvent, publishEvents } from "@emailsvc/events";
import { newId } from "@emailsvc/ids";
import { delivery } from "@emailsvc/proto";
import { SmtpSink } from "@emailsvc/testing";
import { tenantKey } from "@emailsvc/tenancy";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openEmbeddedStore } from "@emailsvc/storage";
import { EMAIL_DEFAULTS, historyOf, type EmailDoc } from "../src/storage/documents.js";
import { DeliveryStorage } from "../src/storage/repositories.js";
import { announcedStatuses, as, smtpProviders, startHarness, tenant, waitFor, type Harness, type StoreKind } from "./harness.js";

// An email record is stored without the fields that hold their defaults
// (storage/documents.ts, EMAIL_DEFAULTS): a campaign email's record at its
// intake and at its outcome. Every reader gets them back
// (storage/email-records.ts), so what the API shows is what it showed when
// every record held every field; records stored so by the previous version
// still load, send and read the same.

const WELCOME = { slug: "welcome", subject: "Hi {{name}}", html: "<p>Hello {{name}}</p>" };
const DEFAULTED = Object.keys(EMAIL_DEFAULTS);

/** One campaign recipient handed over as campaigns does (a batch of one). */
async function handOver(h: Harness, t: ReturnType<typeof tenant>, templateId: string, campaignId: string, emailId: string, subscriberId: string) {
  const meta = { eventId: newId("evt"), tenant: tenantKey(t.tenant), occurredAt: Date.now() };
  await publishEvents(h.bus, [encodeEvent("email.send.requested", meta, { campaignId, templateId, templateVersion: 1, recipients: [{ emailId, subscriberId }] })]);
}

/** A campaign's recipient to hand over: the template, campaign and email ids, and the subscriber at `address`. */
function campaignRecipient(h: Harness, t: ReturnType<typeof tenant>, address: string) {
  return { templateId: h.templates.put(t, WELCOME), campaignId: newId("cmp"), emailId: newId("eml"), subscriberId: h.subscribers.put(t, address, { name: "R" }) };
}

/** What the API shows of an email, less what tells two emails apart (id, address, Message-ID). */
async function shown(h: Harness, t: ReturnType<typeof tenant>, id: string) {
  const { email } = await h.client.getEmail({ id }, as(t));
  const { id: _id, to: _to, messageId, ...rest } = email!;
  return { ...rest, hasMessageId: messageId !== "" };
}

/** A campaign email's record as the previous version stored it at intake: every field, unclaimed. */
function previousRecord(tenantId: string, emailId: string, campaignId: string, subscriberId: string, templateId: string, to: string, at: number): EmailDoc {
  return {
    _id: emailId,
    tenant: tenantId,
    to,
    to_key: to,
    subscriber_id: subscriberId,
    campaign_id: campaignId,
    template_id: templateId,
    template_slug: "welcome",
    template_version: 1,
    variables_json: "{}",
    idempotency_key: "",
    idem_key: `none:${emailId}`,
    request_hash: "",
    status: "queued",
    provider: "smtp",
    message_id: "",
    error: "",
    last_error: "",
    attempts: 0,
    transient_failures: 0,
    lease_until: 0,
    lease_token: "",
    queued_at: at,
    sent_at: null,
    failed_at: null,
    updated_at: at,
    status_history: [{ status: "queued", at, detail: "" }],
    version: 1,
    outbox: [],
    outbox_pending: false,
  };
}

describe.each<StoreKind>(["embedded", "mongodb"])("a campaign email's record on %s storage", (kind) => {
  let sink: SmtpSink;
  let h: Harness | undefined;
  beforeEach(async () => {
    sink = await new SmtpSink().start();
  });
  afterEach(async () => {
    await h?.close();
    h = undefined;
    await sink.close();
  });

  it("is stored without its defaulted fields, and the API shows it as it showed a record holding every field", async () => {
    h = await startHarness({ store: kind, providers: smtpProviders(sink.url()), stalledAfterMs: 600_000 });
    const t = tenant("live");
    const { templateId, campaignId, emailId, subscriberId } = campaignRecipient(h, t, "compact@example.com");
    await handOver(h, t, templateId, campaignId, emailId, subscriberId);
    await waitFor(() => (announcedStatuses(h!, emailId).includes("sent") ? true : undefined), "the email sent");

    const raw = h.store.collection("emails");
    const stored = (await raw.findOne({ _id: emailId }))!;
    // Sent: its Message-ID and time are values of its own; the rest of the defaulted fields were never written.
    expect(stored).toMatchObject({ status: "sent", campaign_id: campaignId });
    expect(typeof stored.message_id).toBe("string");
    expect(typeof stored.sent_at).toBe("number");
    expect(DEFAULTED.filter((field) => field in stored).sort()).toEqual(["message_id", "sent_at"]);
    // The address was given in lower case: it is kept once, as the lookup key.
    expect(stored.to).toBeUndefined();
    expect(stored.to_key).toBe("compact@example.com");
    expect((await h.client.getEmail({ id: emailId }, as(t))).email!.to).toBe("compact@example.com");

    // The same email stored with every field (as the previous version wrote it) shows the same.
    const twinId = newId("eml");
    await raw.insertOne({ ...EMAIL_DEFAULTS, outbox: [], ...stored, _id: twinId, idem_key: `none:${twinId}` });
    expect(await shown(h, t, emailId)).toEqual(await shown(h, t, twinId));
    const view = await shown(h, t, emailId);
    expect(view).toMatchObject({ status: delivery.EmailStatus.SENT, error: "", idempotencyKey: "", hasMessageId: true, attempts: 1 });
    expect(view.failedAt).toBeUndefined();
    expect(view.history.map((c) => c.status)).toEqual([delivery.EmailStatus.QUEUED, delivery.EmailStatus.SENT]);
    // Listed and exported alike.
    const listed = (await h.client.listEmails({ campaignId, limit: 10 }, as(t))).emails;
    expect(listed.map((e) => e.id).sort()).toEqual([emailId, twinId].sort());
    const { id: _a, to: _b, messageId: _c, ...first } = listed.find((e) => e.id === emailId)!;
    const { id: _d, to: _e, messageId: _f, ...second } = listed.find((e) => e.id === twinId)!;
    expect(first).toEqual(second);
    const exported = JSON.parse((await h.client.exportSubscriberData({ subscriberId }, as(t))).json) as { emails: Array<Record<string, unknown>> };
    const [one, two] = exported.emails.map(({ id: _id, ...rest }) => rest);
    expect(exported.emails).toHaveLength(2);
    expect(one).toEqual(two);
    expect(one).toMatchObject({ status: "sent", subject: expect.any(String), campaign_id: campaignId });
  });

  it("sends a record the previous version stored with every field, and shows it as before", async () => {
    h = await startHarness({ store: kind, providers: smtpProviders(sink.url()), stalledAfterMs: 600_000 });
    const t = tenant("live");
    const { templateId, campaignId, emailId, subscriberId } = campaignRecipient(h, t, "previous@example.com");
    // Written as the previous version wrote it (the embedded store's datafile line is that record's JSON).
    await h.store.collection<EmailDoc>("emails").insertOne(previousRecord(tenantKey(t.tenant), emailId, campaignId, subscriberId, templateId, "previous@example.com", Date.now()));
    await handOver(h, t, templateId, campaignId, emailId, subscriberId);
    await waitFor(() => (announcedStatuses(h!, emailId).includes("sent") ? true : undefined), "the email sent");
    const view = await shown(h, t, emailId);
    expect(view).toMatchObject({ status: delivery.EmailStatus.SENT, error: "", idempotencyKey: "", hasMessageId: true, attempts: 1 });
    expect(view.history.map((c) => c.status)).toEqual([delivery.EmailStatus.QUEUED, delivery.EmailStatus.SENT]);
    // Its fields stay as they were written: an update sets only what it sets.
    const after = (await h.store.collection("emails").findOne({ _id: emailId }))!;
    expect(after).toMatchObject({ variables_json: "{}", idempotency_key: "", request_hash: "", error: "", last_error: "", failed_at: null, outbox: [], outbox_pending: false });
    expect(sink.recipientCounts.get("previous@example.com")).toBe(1);
  });

  it("retries a deferred campaign email whose record never had an outbox (the retry sweep's guard)", async () => {
    h = await startHarness({ store: kind, providers: smtpProviders(sink.url()), stalledAfterMs: 600_000 });
    const t = tenant("live");
    const { templateId, campaignId, emailId, subscriberId } = campaignRecipient(h, t, "later@example.com");
    // The relay says "not now" once: the email is deferred, and only the retry sweep asks for it again.
    sink.dataReplies.set("later@example.com", [{ code: 451, text: "4.3.0 try again later" }]);
    await handOver(h, t, templateId, campaignId, emailId, subscriberId);
    await waitFor(() => (announcedStatuses(h!, emailId).includes("sent") ? true : undefined), "the deferred email sent");
    const stored = (await h.store.collection("emails").findOne({ _id: emailId }))!;
    expect(stored).toMatchObject({ status: "sent", attempts: 2, transient_failures: 1 });
    expect(sink.recipientCounts.get("later@example.com")).toBe(1);
  });
});

describe.each<StoreKind>(["embedded", "mongodb"])("the stalled-mail sweep on %s storage", (kind) => {
  it("asks again for a queued campaign email whose record never had an outbox", async () => {
    const h = await startHarness({ store: kind, stalledAfterMs: 300 });
    try {
      const t = tenant("test");
      const { templateId, campaignId, emailId, subscriberId } = campaignRecipient(h, t, "stalled@example.com");
      // As the intake stores it, its send request lost and its lease long run out.
      const longAgo = Date.now() - 60_000;
      const { variables_json, idempotency_key, request_hash, message_id, error, last_error, transient_failures, sent_at, failed_at, outbox, outbox_pending, ...compact } = previousRecord(
        tenantKey(t.tenant),
        emailId,
        campaignId,
        subscriberId,
        templateId,
        "stalled@example.com",
        longAgo,
      );
      await h.store.collection("emails").insertOne({ ...compact, provider: "sandbox", attempts: 1, lease_token: "lost", lease_until: longAgo });
      await waitFor(async () => ((await h.client.getEmail({ id: emailId }, as(t))).email!.status === delivery.EmailStatus.SENT ? true : undefined), "the stalled email sent");
    } finally {
      await h.close();
    }
  });
});

describe("a datafile the previous version wrote", () => {
  it("loads its records with every field, reads them as they are, and an update keeps them", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "delivery-previous-"));
    const tenantId = "acc_01previous:live";
    const at = Date.now();
    const queued = previousRecord(tenantId, newId("eml"), newId("cmp"), newId("sub"), newId("tpl"), "queued@example.com", at);
    const sent: EmailDoc = {
      ...previousRecord(tenantId, newId("eml"), newId("cmp"), newId("sub"), newId("tpl"), "sent@example.com", at),
      status: "sent",
      message_id: "<sent@example.com>",
      sent_at: at + 5,
      subject: "Hi",
      attempts: 1,
      status_history: [
        { status: "queued", at, detail: "" },
        { status: "sent", at: at + 5, detail: "" },
      ],
    };
    writeFileSync(join(dataDir, "emails.db"), `${JSON.stringify(queued)}\n${JSON.stringify(sent)}\n`);
    const store = await openEmbeddedStore({ dataDir });
    try {
      const emails = new DeliveryStorage(store).forTenant(tenantId).emails;
      expect(await emails.findOne({ _id: queued._id })).toEqual(queued);
      expect(await emails.findOne({ _id: sent._id })).toEqual(sent);
      const updated = await emails.updateOne({ _id: queued._id, status: { $in: ["queued"] } }, { $set: { status: "sent", sent_at: at + 9, message_id: "<q@example.com>", updated_at: at + 9 } });
      expect(updated).toEqual({ ...queued, status: "sent", sent_at: at + 9, message_id: "<q@example.com>", updated_at: at + 9 });
      expect(await store.collection("emails").findOne({ _id: queued._id })).toEqual(updated);
    } finally {
      await store.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe("an email's history", () => {
  // The send's write pushes no `sent` change: sent_at is it.
  const q = { status: "queued" as const, at: 1, detail: "" };
  const d = { status: "deferred" as const, at: 2, detail: "451" };
  const sentAt = (at: number) => ({ status: "sent" as const, at, detail: "" });
  it("shows the sent change after the changes before sending and before those after", () => {
    expect(historyOf({ status: "sent", sent_at: 3, updated_at: 3, status_history: [q] })).toEqual([q, sentAt(3)]);
    expect(historyOf({ status: "sent", sent_at: 3, updated_at: 3, status_history: [q, d] })).toEqual([q, d, sentAt(3)]);
    // A late bounce in the same millisecond as the send still follows it.
    const bounced = { status: "bounced" as const, at: 3, detail: "550" };
    expect(historyOf({ status: "bounced", sent_at: 3, updated_at: 3, status_history: [q, bounced] })).toEqual([q, sentAt(3), bounced]);
  });
  it("shows a history stored with its sent change, an unsent email's, and one from before histories as they are", () => {
    expect(historyOf({ status: "sent", sent_at: 3, updated_at: 3, status_history: [q, sentAt(3)] })).toEqual([q, sentAt(3)]);
    expect(historyOf({ status: "deferred", sent_at: null, updated_at: 2, status_history: [q, d] })).toEqual([q, d]);
    expect(historyOf({ status: "sent", sent_at: 3, updated_at: 4 })).toEqual([{ status: "sent", at: 4, detail: "" }]);
  });
});
