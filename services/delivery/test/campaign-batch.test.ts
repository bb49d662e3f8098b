import { fromBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { encodeEvent, publishEvents } from "@emailsvc/events";
import { newId } from "@emailsvc/ids";
import { delivery, events, MailingBlock } from "@emailsvc/proto";
import { SmtpSink } from "@emailsvc/testing";
import { tenantKey } from "@emailsvc/tenancy";
import type { EmailDoc } from "../src/storage/documents.js";
import { announcedOutcomes, announcedStatuses, as, sleep, smtpProviders, startHarness, tenant, waitFor, type Harness, type StoreKind } from "./harness.js";

/** Waits until the email is sent; one not found yet (not taken in yet: a busy machine may leave it for later) is waited for too. */
async function untilSent(h: Harness, t: ReturnType<typeof tenant>, emailId: string): Promise<void> {
  const sent = async () => {
    try {
      return (await h.client.getEmail({ id: emailId }, as(t))).email!.status === delivery.EmailStatus.SENT ? true : undefined;
    } catch (err) {
      if (ConnectError.from(err).code === Code.NotFound) return undefined;
      throw err;
    }
  };
  await waitFor(sent, `${emailId} sent`, 20_000);
}

// A campaign hands its recipients over as one email.send.requested per batch
// (services/campaigns, dispatcher.ts): delivery's consumer takes a batch in
// windows (messaging/send-consumer.ts), sends at most its concurrency at once,
// and a retried batch skips what is already settled.

const WELCOME = { slug: "welcome", subject: "Hi {{name}}", html: "<p>Hello {{name}}</p>" };

/** A campaign's recipients handed over as events of `perEvent` each (the last may be the form from before batches). */
async function handOver(h: Harness, t: ReturnType<typeof tenant>, addresses: string[], perEvent: number, lastAlone = false) {
  const templateId = h.templates.put(t, WELCOME);
  const campaignId = newId("cmp");
  const recipients = addresses.map((address) => ({ emailId: newId("eml"), subscriberId: h.subscribers.put(t, address, { name: "R" }), address }));
  const origin = () => ({ eventId: newId("evt"), tenant: tenantKey(t.tenant), occurredAt: Date.now() });
  const batched = lastAlone ? recipients.slice(0, -1) : recipients;
  const requests = [];
  for (let i = 0; i < batched.length; i += perEvent) {
    const slice = batched.slice(i, i + perEvent).map(({ emailId, subscriberId }) => ({ emailId, subscriberId }));
    requests.push(encodeEvent("email.send.requested", origin(), { campaignId, templateId, templateVersion: 1, recipients: slice }));
  }
  if (lastAlone) {
    const { emailId, subscriberId } = recipients.at(-1)!;
    requests.push(encodeEvent("email.send.requested", origin(), { emailId, campaignId, subscriberId, templateId, templateVersion: 1 }));
  }
  await publishEvents(h.bus, requests);
  return { campaignId, recipients };
}

describe.each<StoreKind>(["embedded", "mongodb"])("a campaign's batch of recipients on %s storage", (kind) => {
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

  it("sends every recipient of one event once, no more than the concurrency at the relay at once, and takes in no more than a window ahead of the sends", async () => {
    const concurrency = 2;
    h = await startHarness({ store: kind, providers: smtpProviders(sink.url()), sendConcurrency: concurrency });
    const t = tenant("live");
    const addresses = Array.from({ length: 30 }, (_, i) => `batch${i}@example.com`);
    // The relay holds every DATA until told: what is in its hands is what is sent at once.
    sink.dataDelayMs = 60_000;
    // One event (one partition: the concurrency bounds the sends of a partition's batch).
    const { campaignId, recipients } = await handOver(h, t, addresses, 100);
    const arrived = () => addresses.reduce((sum, address) => sum + sink.to(address).length, 0);
    await waitFor(() => (arrived() >= concurrency ? true : undefined), "the first sends at the relay");
    await sleep(500);
    expect(arrived()).toBe(concurrency);
    // Records are stored (and leased) a window at a time, not for the whole event: 3 × concurrency, at most
    // 4 × concurrency (one window and what waits from the last) while the first sends are held.
    const stored = await h.store.collection<EmailDoc>("emails").find({ campaign_id: campaignId });
    expect(stored.length).toBeGreaterThanOrEqual(concurrency);
    expect(stored.length).toBeLessThanOrEqual(4 * concurrency);

    sink.dataDelayMs = 0;
    sink.releaseHeld();
    for (const { emailId } of recipients) await untilSent(h, t, emailId);
    for (const address of addresses) expect(sink.to(address).filter((m) => m.accepted)).toHaveLength(1);
    // Each answered to campaigns once.
    await waitFor(() => (recipients.every(({ emailId }) => announcedStatuses(h!, emailId).length > 0) ? true : undefined), "every outcome announced");
    for (const { emailId } of recipients) expect(announcedStatuses(h, emailId)).toEqual(["sent"]);
    // As items of batch events (OUTCOMES_PER_PUBLISH × concurrency, 16, to a publish: 30 outcomes in at least
    // two), each event keyed by its first email id, each item with its own time.
    const outcomes = recipients.map(({ emailId }) => announcedOutcomes(h!, emailId)[0]!);
    const batches = new Set(outcomes.map((o) => o.event));
    expect(batches.size).toBeGreaterThanOrEqual(2);
    expect(batches.size).toBeLessThanOrEqual(recipients.length / 2);
    for (const event of batches) {
      const message = fromBinary(events.EmailStatusChangedSchema, event.value);
      expect(message).toMatchObject({ emailId: "", status: "", campaignId: "" });
      expect(message.outcomes.length).toBeGreaterThan(1);
      expect(event.key).toBe(message.outcomes[0]!.emailId);
      expect(message.outcomes[0]!.afterMs).toBe(0);
    }
    for (const o of outcomes) expect(o).toMatchObject({ status: "sent", campaignId, reason: "", bounceType: "" });
  });

  it("answers the intake's refusals together, and those handed over again together, as batch events", async () => {
    h = await startHarness({ store: kind, providers: smtpProviders(sink.url()) });
    const t = tenant("live");
    const templateId = h.templates.put(t, WELCOME);
    const campaignId = newId("cmp");
    // Mailed; unsubscribed (refused at the intake, stored suppressed); erased (no subscriber: refused, not stored).
    const sent = { emailId: newId("eml"), subscriberId: h.subscribers.put(t, "ok@example.com", { name: "R" }) };
    const left = { emailId: newId("eml"), subscriberId: h.subscribers.put(t, "left@example.com", {}, undefined, { marketing: MailingBlock.UNSUBSCRIBED }) };
    const erased = { emailId: newId("eml"), subscriberId: newId("sub") };
    const handOverAll = () =>
      publishEvents(h!.bus, [
        encodeEvent("email.send.requested", { eventId: newId("evt"), tenant: tenantKey(t.tenant), occurredAt: Date.now() }, { campaignId, templateId, templateVersion: 1, recipients: [sent, left, erased] }),
      ]);
    const all = [sent, left, erased];
    await handOverAll();
    await waitFor(() => (all.every(({ emailId }) => announcedStatuses(h!, emailId).length === 1) ? true : undefined), "every outcome announced");
    const [first, refusedLeft, refusedErased] = all.map(({ emailId }) => announcedOutcomes(h!, emailId)[0]!);
    expect(first).toMatchObject({ status: "sent", subscriberId: sent.subscriberId, campaignId });
    expect(refusedLeft).toMatchObject({ status: "suppressed", reason: "recipient_unsubscribed", failureReason: delivery.FailureReason.RECIPIENT_UNSUBSCRIBED, subscriberId: left.subscriberId });
    expect(refusedErased).toMatchObject({ status: "suppressed", reason: "recipient_erased", failureReason: delivery.FailureReason.RECIPIENT_ERASED, subscriberId: erased.subscriberId });
    // The refusals of one intake in one event, the send's outcome in another.
    expect(refusedLeft!.event).toBe(refusedErased!.event);
    expect(first!.event).not.toBe(refusedLeft!.event);

    // Handed over again (campaigns heard nothing yet): the stored ones said again together, the erased one refused again.
    await handOverAll();
    await waitFor(() => (all.every(({ emailId }) => announcedStatuses(h!, emailId).length === 2) ? true : undefined), "every outcome said again");
    const [again, againLeft, againErased] = all.map(({ emailId }) => announcedOutcomes(h!, emailId)[1]!);
    expect(again).toMatchObject({ status: "sent", campaignId });
    expect(againLeft).toMatchObject({ status: "suppressed", failureReason: delivery.FailureReason.RECIPIENT_UNSUBSCRIBED });
    expect(againErased).toMatchObject({ status: "suppressed", failureReason: delivery.FailureReason.RECIPIENT_ERASED });
    expect(again!.event).toBe(againLeft!.event);
    expect(fromBinary(events.EmailStatusChangedSchema, again!.event.value).outcomes).toHaveLength(2);
    expect(sink.to("ok@example.com").filter((m) => m.accepted)).toHaveLength(1);
  });

  it("with EMAIL_STATUS_BATCHES off, answers each campaign email with an event of its own, keyed by it", async () => {
    h = await startHarness({ store: kind, providers: smtpProviders(sink.url()), outcomeBatches: false });
    const t = tenant("live");
    const { campaignId, recipients } = await handOver(h, t, ["one@example.com", "two@example.com", "three@example.com"], 100);
    await waitFor(() => (recipients.every(({ emailId }) => announcedStatuses(h!, emailId).length > 0) ? true : undefined), "every outcome announced");
    for (const { emailId, subscriberId } of recipients) {
      const [outcome] = announcedOutcomes(h, emailId);
      expect(outcome!.event.key).toBe(emailId);
      expect(fromBinary(events.EmailStatusChangedSchema, outcome!.event.value)).toMatchObject({ emailId, subscriberId, campaignId, status: "sent", outcomes: [] });
    }
  });

  it("retries the event when one recipient's send is cut off, sending only that one again: the settled ones are skipped by their records", async () => {
    h = await startHarness({ store: kind, providers: smtpProviders(sink.url()), leaseMs: 400 });
    const t = tenant("live");
    const addresses = Array.from({ length: 8 }, (_, i) => `retry${i}@example.com`);
    sink.dataDelayMs = 3000;
    // An event of 7, and one recipient in the form from before batches (events in a log when an operator upgrades).
    const { recipients } = await handOver(h, t, addresses, 100, true);
    // One email in the relay's hands (its reply held): another attempt takes its lease (as one would once a lease
    // ran out); its send is cut off, and the event retried.
    const taken = await waitFor(() => recipients.slice(0, -1).find(({ address }) => sink.to(address).some((m) => !m.accepted)), "a send of the batch at the relay");
    const emails = h.store.collection<EmailDoc>("emails");
    expect(await emails.updateOne({ _id: taken.emailId, status: "queued" }, { $set: { lease_token: "another-attempt", lease_until: Date.now() + 1500 }, $inc: { attempts: 1 } })).not.toBeNull();
    sink.dataDelayMs = 0;
    await waitFor(async () => ((await h!.client.getEmail({ id: taken.emailId }, as(t))).email!.status === delivery.EmailStatus.SENT ? true : undefined), "sent by a later attempt", 20_000);
    // The others: sent at their first attempt, and never tried again by the retried event.
    for (const { emailId } of recipients) {
      const email = await waitFor(async () => {
        const found = (await h!.client.getEmail({ id: emailId }, as(t))).email!;
        return found.status === delivery.EmailStatus.SENT ? found : undefined;
      }, `${emailId} sent`);
      expect(email.attempts).toBe(emailId === taken.emailId ? 3 : 1);
    }
    for (const address of addresses) expect(sink.to(address).filter((m) => m.accepted)).toHaveLength(1);
    // The cut-off hand-off never got the relay's reply on its connection.
    expect(sink.to(taken.address).filter((m) => !m.accepted)).toHaveLength(1);
    // The retried event said the settled ones' outcome again (campaigns may have handed them over again).
    expect(recipients.filter(({ emailId }) => announcedStatuses(h!, emailId).length > 1).length).toBeGreaterThan(0);
  });

  it("cuts a recipient's hand-off off at its deadline (the batch's sweep), defers it, and sends it once the relay answers", async () => {
    h = await startHarness({ store: kind, providers: smtpProviders(sink.url()), leaseMs: 5000, attemptTimeoutMs: 400 });
    const t = tenant("live");
    sink.dataDelayMs = 5000;
    const dataIn = sink.nextData();
    const { recipients } = await handOver(h, t, ["late@example.com"], 100);
    await dataIn;
    const [{ emailId }] = recipients as [(typeof recipients)[number]];
    // The deadline, not the lease (5 s) or the relay (5 s), ended the attempt: deferred as a transient failure.
    const released = await waitFor(async () => {
      const doc = await h!.store.collection<EmailDoc>("emails").findOne({ _id: emailId });
      return doc && doc.transient_failures > 0 ? doc : undefined;
    }, "the attempt cut off at its deadline");
    expect(released.status).toBe("deferred");
    expect(released.last_error).toMatch(/^send timed out/);
    sink.dataDelayMs = 0;
    await waitFor(async () => ((await h!.client.getEmail({ id: emailId }, as(t))).email!.status === delivery.EmailStatus.SENT ? true : undefined), "sent on a later attempt", 20_000);
    expect(sink.to("late@example.com").filter((m) => m.accepted)).toHaveLength(1);
    // Answered to campaigns once, with the batch that sent it (a deferral says nothing to campaigns).
    await waitFor(() => (announcedStatuses(h!, emailId).length > 0 ? true : undefined), "the outcome announced");
    expect(announcedStatuses(h, emailId)).toEqual(["sent"]);
  });

  it("stopped mid-event, takes in nothing more, and the next instance sends the rest: each recipient once", async () => {
    const settings = { providers: smtpProviders(sink.url()), sendConcurrency: 2, leaseMs: 1000 };
    h = await startHarness({ store: kind, ...settings });
    const t = tenant("live");
    const addresses = Array.from({ length: 24 }, (_, i) => `stop${i}@example.com`);
    sink.dataDelayMs = 400;
    const { campaignId, recipients } = await handOver(h, t, addresses, 100);
    await sink.whenAccepted(2);
    await h.service.close({ graceMs: 5000 });
    // What was taken in was sent within the grace; nothing after it was stored.
    const sentBefore = sink.accepted.length;
    expect(sentBefore).toBeLessThan(addresses.length);
    const stored = await h.store.collection<EmailDoc>("emails").find({ campaign_id: campaignId });
    expect(stored.length).toBeLessThan(addresses.length);
    sink.dataDelayMs = 0;
    await h.restart(settings);
    for (const { emailId } of recipients) await untilSent(h, t, emailId);
    for (const address of addresses) expect(sink.to(address).filter((m) => m.accepted)).toHaveLength(1);
  });
});
