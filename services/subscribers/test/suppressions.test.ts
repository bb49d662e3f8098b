import { Code } from "@connectrpc/connect";
import { newId } from "@emailsvc/ids";
import { DeliveryProblem, MailingBlock, SubscriberStatus, SuppressionReason } from "@emailsvc/proto";
import { readError } from "@emailsvc/errors";
import { as, startHarness, tenant, waitFor, type Harness, type StoreKind } from "./harness.js";

// The suppression list and delivery's reports of bounces and complaints, over
// real gRPC, on both stores: what each report does to the list and the
// subscriber, what the list does to who may be mailed, and idempotency.

const fail = (promise: Promise<unknown>) =>
  promise.then(() => {
    throw new Error("expected the call to fail");
  }, readError);

describe.each<StoreKind>(["embedded", "mongodb"])("suppression list on %s storage", (kind) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(kind, { softBounces: { limit: 3, windowMs: 60_000 } });
  });
  afterAll(() => h?.close());

  const report = (t: ReturnType<typeof tenant>, email: string, problem: DeliveryProblem, emailId = newId("eml")) =>
    h.suppressions.recordDeliveryProblem({ email, problem, emailId }, as(t));
  const lookup = async (t: ReturnType<typeof tenant>, email: string) => (await h.audience.getRecipientByEmail({ email }, as(t))).mailability!;
  const create = async (t: ReturnType<typeof tenant>, email: string) => (await h.subscribers.createSubscriber({ email }, as(t))).subscriber!.id;
  const statusOf = async (t: ReturnType<typeof tenant>, id: string) => (await h.subscribers.getSubscriber({ id }, as(t))).subscriber!.status;
  const entries = async (t: ReturnType<typeof tenant>, reason = SuppressionReason.UNSPECIFIED) =>
    (await h.suppressions.listSuppressions({ reason, limit: 500 }, as(t))).suppressions;

  it("a hard bounce lists the address and moves its subscriber to bounced, audited; a repeat changes nothing", async () => {
    const t = tenant("live");
    const id = await create(t, "Gone@Example.com");
    const emailId = newId("eml");
    expect(await report(t, "gone@example.com", DeliveryProblem.HARD_BOUNCE, emailId)).toMatchObject({ suppressed: true, subscriberId: id });
    expect(await statusOf(t, id)).toBe(SubscriberStatus.BOUNCED);
    expect(await entries(t)).toMatchObject([{ email: "gone@example.com", reason: SuppressionReason.HARD_BOUNCE, source: "delivery", emailId }]);
    expect(await lookup(t, "GONE@example.com")).toMatchObject({ marketing: MailingBlock.BOUNCED, transactional: MailingBlock.BOUNCED });
    await report(t, "gone@example.com", DeliveryProblem.HARD_BOUNCE, emailId);
    expect(await entries(t)).toHaveLength(1);
    const trail = (await h.subscribers.listSubscriberEvents({ subscriberId: id, limit: 100 }, as(t))).events;
    expect(trail.filter((e) => e.type === "subscriber.status_changed")).toHaveLength(1);
    expect(trail.filter((e) => e.type === "suppression.added")).toHaveLength(1);
    expect(JSON.stringify(trail.map((e) => e.data)).toLowerCase()).not.toContain("gone@example.com");
    await waitFor(() => h.received.find((e) => e.topic === "subscriber.status_changed" && e.key === id), "subscriber.status_changed");
  });

  it("a complaint outranks a bounce, in the list and the subscriber's status, whatever the order", async () => {
    const t = tenant("live");
    const id = await create(t, "angry@example.com");
    await report(t, "angry@example.com", DeliveryProblem.COMPLAINT);
    await report(t, "angry@example.com", DeliveryProblem.HARD_BOUNCE);
    expect(await statusOf(t, id)).toBe(SubscriberStatus.COMPLAINED);
    expect((await entries(t)).map((e) => e.reason)).toEqual([SuppressionReason.COMPLAINT]);
    const other = await create(t, "later@example.com");
    await report(t, "later@example.com", DeliveryProblem.HARD_BOUNCE);
    await report(t, "later@example.com", DeliveryProblem.COMPLAINT);
    expect(await statusOf(t, other)).toBe(SubscriberStatus.COMPLAINED);
    expect((await entries(t, SuppressionReason.COMPLAINT)).map((e) => e.email).sort()).toEqual(["angry@example.com", "later@example.com"]);
  });

  it("soft bounces suppress at the limit within the window, each email counted once", async () => {
    const t = tenant("live");
    const id = await create(t, "flaky@example.com");
    const first = newId("eml");
    expect(await report(t, "flaky@example.com", DeliveryProblem.SOFT_BOUNCE, first)).toMatchObject({ suppressed: false });
    expect(await report(t, "flaky@example.com", DeliveryProblem.SOFT_BOUNCE, first)).toMatchObject({ suppressed: false });
    expect(await report(t, "flaky@example.com", DeliveryProblem.SOFT_BOUNCE)).toMatchObject({ suppressed: false });
    expect(await statusOf(t, id)).toBe(SubscriberStatus.ACTIVE);
    expect(await entries(t)).toEqual([]);
    expect(await report(t, "flaky@example.com", DeliveryProblem.SOFT_BOUNCE)).toMatchObject({ suppressed: true, subscriberId: id });
    expect(await statusOf(t, id)).toBe(SubscriberStatus.BOUNCED);
    expect((await entries(t)).map((e) => [e.email, e.reason])).toEqual([["flaky@example.com", SuppressionReason.HARD_BOUNCE]]);
  });

  it("an address that is nobody's is listed by a bounce; the list decides its mail, per reason and category", async () => {
    const t = tenant("live");
    await report(t, "stranger@example.com", DeliveryProblem.HARD_BOUNCE);
    expect(await lookup(t, "stranger@example.com")).toMatchObject({ marketing: MailingBlock.BOUNCED, transactional: MailingBlock.BOUNCED });
    // Added by hand: marketing only; the subscriber (active) keeps its status, GetRecipients sees the entry too.
    const id = await create(t, "quiet@example.com");
    expect(await h.suppressions.addSuppression({ email: "quiet@example.com", reason: SuppressionReason.MANUAL }, as(t))).toMatchObject({ created: true });
    expect(await lookup(t, "quiet@example.com")).toMatchObject({ marketing: MailingBlock.SUPPRESSED, transactional: MailingBlock.UNSPECIFIED });
    const [recipient] = (await h.audience.getRecipients({ subscriberIds: [id] }, as(t))).recipients;
    expect(recipient!.mailability).toMatchObject({ marketing: MailingBlock.SUPPRESSED, transactional: MailingBlock.UNSPECIFIED });
    expect(await statusOf(t, id)).toBe(SubscriberStatus.ACTIVE);
    // Another tenant (the same account's test mode) knows nothing of it.
    const other = tenant("test", t.tenant.accountId);
    expect(await lookup(other, "stranger@example.com")).toMatchObject({ marketing: MailingBlock.UNSPECIFIED, transactional: MailingBlock.UNSPECIFIED });
    expect(await entries(other)).toEqual([]);
    await expect(h.suppressions.removeSuppression({ email: "quiet@example.com", reason: "not theirs" }, as(other))).rejects.toThrow();
    expect(await entries(t, SuppressionReason.MANUAL)).toHaveLength(1);
  });

  it("an erasure keeps a bounced address's reason under its hash alone", async () => {
    const t = tenant("live");
    const id = await create(t, "left.and.gone@example.com");
    await report(t, "left.and.gone@example.com", DeliveryProblem.HARD_BOUNCE);
    await h.subscribers.deleteSubscriber({ id }, as(t));
    const [entry] = await entries(t);
    expect(entry).toMatchObject({ email: "", reason: SuppressionReason.HARD_BOUNCE });
    expect(await lookup(t, "left.and.gone@example.com")).toMatchObject({ transactional: MailingBlock.BOUNCED });
    // The erased person's entry has no address to remove it by; a create needs their renewed consent.
    expect((await fail(h.suppressions.removeSuppression({ email: "left.and.gone@example.com", reason: "x" }, as(t)))).code).toBe(Code.NotFound);
    expect((await fail(h.subscribers.createSubscriber({ email: "left.and.gone@example.com" }, as(t)))).errorCode).toBe("subscriber_suppressed");
  });

  it("refuses bad reports and bad entries with INVALID_ARGUMENT and changes nothing", async () => {
    const t = tenant("live");
    const bad = [
      h.suppressions.recordDeliveryProblem({ email: "not an address", problem: DeliveryProblem.HARD_BOUNCE, emailId: newId("eml") }, as(t)),
      h.suppressions.recordDeliveryProblem({ email: "a@example.com", problem: DeliveryProblem.UNSPECIFIED, emailId: newId("eml") }, as(t)),
      h.suppressions.recordDeliveryProblem({ email: "a@example.com", problem: DeliveryProblem.HARD_BOUNCE, emailId: "sub_1" }, as(t)),
      h.suppressions.addSuppression({ email: "a@example.com", reason: SuppressionReason.HARD_BOUNCE }, as(t)),
      h.suppressions.addSuppression({ email: "a@example.com", reason: SuppressionReason.UNSPECIFIED }, as(t)),
      h.suppressions.removeSuppression({ email: "a@example.com", reason: "\u200b " }, as(t)),
      h.suppressions.removeSuppression({ email: "a@example.com", reason: "x".repeat(501) }, as(t)),
      h.suppressions.listSuppressions({ cursor: "not-a-cursor" }, as(t)),
    ];
    for (const call of bad) expect((await fail(call)).code).toBe(Code.InvalidArgument);
    expect(await entries(t)).toEqual([]);
  });

  it("finds one address (any case) by its entry, of a reason if asked; refuses an invalid one", async () => {
    const t = tenant("live");
    await h.suppressions.addSuppression({ email: "Wanted@Example.com", reason: SuppressionReason.MANUAL }, as(t));
    await h.suppressions.addSuppression({ email: "other@example.com", reason: SuppressionReason.MANUAL }, as(t));
    const search = async (email: string, reason = SuppressionReason.UNSPECIFIED) =>
      (await h.suppressions.listSuppressions({ email, reason, limit: 50 }, as(t))).suppressions.map((s) => s.email);
    expect(await search("WANTED@example.COM")).toEqual(["Wanted@Example.com"]);
    expect(await search("wanted@example.com", SuppressionReason.COMPLAINT)).toEqual([]);
    expect(await search("nobody@example.com")).toEqual([]);
    // Another tenant's list does not have it.
    expect((await h.suppressions.listSuppressions({ email: "wanted@example.com", limit: 50 }, as(tenant("live")))).suppressions).toEqual([]);
    expect((await fail(h.suppressions.listSuppressions({ email: "not an address", limit: 50 }, as(t)))).code).toBe(Code.InvalidArgument);
  });

  it("pages the list with cursors", async () => {
    const t = tenant("live");
    for (let i = 0; i < 5; i++) await h.suppressions.addSuppression({ email: `p${i}@example.com`, reason: SuppressionReason.MANUAL }, as(t));
    const seen: string[] = [];
    let cursor = "";
    do {
      const page = await h.suppressions.listSuppressions({ limit: 2, cursor }, as(t));
      expect(page.suppressions.length).toBeLessThanOrEqual(2);
      seen.push(...page.suppressions.map((s) => s.email));
      cursor = page.nextCursor;
    } while (cursor);
    expect(seen.sort()).toEqual(["p0@example.com", "p1@example.com", "p2@example.com", "p3@example.com", "p4@example.com"]);
  });
});
