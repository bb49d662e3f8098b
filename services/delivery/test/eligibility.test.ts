import { fromBinary } from "@bufbuild/protobuf";
import { delivery, events, MailingBlock } from "@emailsvc/proto";
import { as, startHarness, tenant, waitFor, type Harness } from "./harness.js";

// Whether an email may go to its recipient, over real gRPC: the (fake)
// subscribers service answers per category, delivery applies the answer at
// SendEmail (refused at once when it can tell) and again at the send attempt.

describe("delivery applies the subscribers service's answer", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ store: "embedded" });
  });
  afterAll(async () => {
    await h?.close();
  });

  const statusEvents = (emailId: string) =>
    h.received.filter((e) => e.topic === "email.status" && e.key === emailId).map((e) => fromBinary(events.EmailStatusChangedSchema, e.value));
  const settled = (t: ReturnType<typeof tenant>, id: string) =>
    waitFor(async () => {
      const e = (await h.client.getEmail({ id }, as(t))).email!;
      return e.status === delivery.EmailStatus.QUEUED ? undefined : e;
    }, "the email settled");

  it("refuses at SendEmail: stored suppressed with its reason (enum and code), answered refused, never sent; a replay says the same", async () => {
    const t = tenant("test");
    h.templates.put(t, { slug: "news", subject: "News", html: "<p>News</p>", category: "marketing" });
    const subscriberId = h.subscribers.put(t, "left@example.com", {}, undefined, { marketing: MailingBlock.UNSUBSCRIBED });
    const request = { templateSlug: "news", to: "left@example.com", idempotencyKey: "news-1" };
    const res = await h.client.sendEmail(request, as(t));
    expect(res).toMatchObject({ refused: true, replayed: false });
    expect(res.email).toMatchObject({
      status: delivery.EmailStatus.SUPPRESSED,
      error: "recipient_unsubscribed",
      failureReason: delivery.FailureReason.RECIPIENT_UNSUBSCRIBED,
      attempts: 0,
    });
    const again = await h.client.sendEmail(request, as(t));
    expect(again).toMatchObject({ refused: true, replayed: true, email: { id: res.email!.id } });
    const [status] = await waitFor(async () => (statusEvents(res.email!.id).length > 0 ? statusEvents(res.email!.id) : undefined), "email.status");
    expect(res.email!.history.map((c) => [c.status, c.detail])).toEqual([[delivery.EmailStatus.SUPPRESSED, "recipient_unsubscribed"]]);
    expect(status).toMatchObject({ status: "suppressed", reason: "recipient_unsubscribed", failureReason: delivery.FailureReason.RECIPIENT_UNSUBSCRIBED, subscriberId });
    expect(h.received.filter((e) => e.topic === "email.send.requested" && e.key === res.email!.id)).toEqual([]);
    await expect(h.client.getSandboxMessage({ emailId: res.email!.id }, as(t))).rejects.toThrow();
  });

  it("refuses marketing mail to a suppressed address (no subscriber any more), sends it transactional mail", async () => {
    const t = tenant("test");
    h.templates.put(t, { slug: "news", subject: "News", html: "<p>News</p>", category: "marketing" });
    h.templates.put(t, { slug: "receipt", subject: "Receipt", html: "<p>Thanks</p>", category: "transactional" });
    h.subscribers.put(t, "erased@example.com");
    h.subscribers.remove(t, "erased@example.com", { suppress: true });
    const news = await h.client.sendEmail({ templateSlug: "news", to: "Erased@example.com" }, as(t));
    expect(news).toMatchObject({ refused: true, email: { error: "recipient_suppressed", failureReason: delivery.FailureReason.RECIPIENT_SUPPRESSED } });
    const receipt = await h.client.sendEmail({ templateSlug: "receipt", to: "erased@example.com" }, as(t));
    expect(receipt.refused).toBe(false);
    expect(await settled(t, receipt.email!.id)).toMatchObject({ status: delivery.EmailStatus.SENT, failureReason: delivery.FailureReason.UNSPECIFIED });
  });

  it("asks again at the send attempt: a refusal SendEmail could not hear in time suppresses the email there", async () => {
    const t = tenant("test");
    h.templates.put(t, { slug: "receipt", subject: "Receipt", html: "<p>Thanks</p>", category: "transactional" });
    h.subscribers.put(t, "bounced@example.com", {}, undefined, { marketing: MailingBlock.BOUNCED, transactional: MailingBlock.BOUNCED });
    h.subscribers.slowFirst.add("bounced@example.com");
    const res = await h.client.sendEmail({ templateSlug: "receipt", to: "bounced@example.com" }, as(t));
    expect(res.refused).toBe(false);
    expect(res.email!.status).toBe(delivery.EmailStatus.QUEUED);
    const failed = await settled(t, res.email!.id);
    expect(failed).toMatchObject({
      status: delivery.EmailStatus.SUPPRESSED,
      error: "recipient_bounced",
      failureReason: delivery.FailureReason.RECIPIENT_BOUNCED,
      attempts: 1,
    });
    await waitFor(async () => statusEvents(res.email!.id).find((e) => e.status === "suppressed"), "email.status suppressed");
    expect(statusEvents(res.email!.id).find((e) => e.status === "suppressed")!.failureReason).toBe(delivery.FailureReason.RECIPIENT_BOUNCED);
    await expect(h.client.getSandboxMessage({ emailId: res.email!.id }, as(t))).rejects.toThrow();
  });
});
