import { Code } from "@connectrpc/connect";
import { readError } from "@emailsvc/errors";
import { fromBinary } from "@bufbuild/protobuf";
import { events, MailingBlock, SubscriberStatus, type SubscribersExportPart } from "@emailsvc/proto";
import { as, startHarness, tenant, waitFor, type Harness, type StoreKind } from "./harness.js";

// Double opt-in: SignUp, the pending status, confirmation, the expiry sweep,
// the account's settings and the consent records, over real gRPC on both stores.

const fail = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error("expected the call to fail");
    },
    readError,
  );

const form = { source: "form", ip: "203.0.113.7", userAgent: "Mozilla/5.0 (signup form)" };
const click = { source: "portal", ip: "198.51.100.9", userAgent: "Mozilla/5.0 (confirmation click)" };

describe.each<StoreKind>(["embedded", "mongodb"])("double opt-in on %s storage", (kind) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(kind, { expirySweepIntervalMs: 100, minConfirmationExpirySeconds: 1 });
  });
  afterAll(async () => {
    await h?.close();
  });

  async function publicTag(t: ReturnType<typeof tenant>, name: string): Promise<void> {
    await h.tags.createTag({ name, isPublic: true }, as(t));
  }

  async function byEmail(t: ReturnType<typeof tenant>, email: string) {
    return (await h.subscribers.getSubscriberByEmail({ email }, as(t))).subscriber!;
  }

  it("signs a new address up as pending (the default), with its public tags, a deadline and the consent record", async () => {
    const t = tenant();
    await publicTag(t, "news");
    expect((await h.subscribers.getAudienceSettings({}, as(t))).settings).toMatchObject({ doubleOptIn: true, doubleOptInForApi: false, confirmationExpirySeconds: 604800, confirmationTemplate: "" });

    const answer = await h.subscribers.signUp(
      { email: "Ada@Example.com", tags: ["news"], locale: "de", metadata: { from: "footer" }, consent: { text: "Yes, send me the newsletter.", version: "v3", sourceId: "form_1" }, audit: form },
      as(t),
    );
    expect(Object.keys(answer).filter((k) => !k.startsWith("$"))).toEqual([]);
    const sub = await byEmail(t, "ada@example.com");
    expect(sub.status).toBe(SubscriberStatus.PENDING);
    expect(sub.tags).toEqual(["news"]);
    expect(sub.locale).toBe("de");

    // No marketing mail before the confirmation; transactional (the confirmation itself) may go.
    const recipient = await h.audience.getRecipientByEmail({ email: "ada@example.com" }, as(t));
    expect(recipient.mailability).toMatchObject({ marketing: MailingBlock.UNCONFIRMED, transactional: MailingBlock.UNSPECIFIED });
    expect((await h.audience.countAudience({ filter: {} }, as(t))).count).toBe(0n);
    expect((await h.audience.countAudience({ filter: { includeTags: ["news"] } }, as(t))).count).toBe(0n);

    // subscriber.created says pending: a trigger on signups waits for the confirmation.
    const created = await waitFor(() => h.received.find((e) => e.topic === "subscriber.created" && e.key === sub.id), "subscriber.created");
    expect(fromBinary(events.SubscriberCreatedSchema, created.value).status).toBe(SubscriberStatus.PENDING);

    const part = JSON.parse((await h.subscribers.exportSubscriberData({ subscriberId: sub.id }, as(t))).json) as SubscribersExportPart;
    expect(part.consent).toEqual([
      expect.objectContaining({
        action: "opt_in_requested",
        scope: "all",
        source: "form",
        ip: form.ip,
        user_agent: form.userAgent,
        wording: { text: "Yes, send me the newsletter.", version: "v3", source_id: "form_1" },
      }),
    ]);
  });

  it("confirms a pending subscriber once: active, the click in the consent record; a second click is not_pending", async () => {
    const t = tenant();
    await h.subscribers.signUp({ email: "bob@example.com", audit: form }, as(t));
    const pending = await byEmail(t, "bob@example.com");

    const { subscriber } = await h.subscribers.confirmSubscriber({ subscriberId: pending.id, audit: click }, as(t));
    expect(subscriber!.status).toBe(SubscriberStatus.ACTIVE);
    expect((await h.audience.countAudience({ filter: {} }, as(t))).count).toBe(1n);
    const again = await fail(h.subscribers.confirmSubscriber({ subscriberId: pending.id, audit: click }, as(t)));
    expect(again.code).toBe(Code.FailedPrecondition);
    expect(again.errorCode).toBe("not_pending");

    const consent = await waitFor(async () => {
      const part = JSON.parse((await h.subscribers.exportSubscriberData({ subscriberId: pending.id }, as(t))).json) as SubscribersExportPart;
      return part.consent.length === 2 ? part.consent : undefined;
    }, "the confirmation in the consent record");
    expect(consent.map((c) => c.action)).toEqual(["opt_in_requested", "confirmed"]);
    expect(consent[1]).toMatchObject({ source: "portal", ip: click.ip, user_agent: click.userAgent });
    // Another tenant cannot confirm it.
    expect((await fail(h.subscribers.confirmSubscriber({ subscriberId: pending.id }, as(tenant())))).code).toBe(Code.NotFound);
  });

  it("answers the same empty message for a known, pending, unsubscribed or suppressed address, and changes none of them", async () => {
    const t = tenant();
    await publicTag(t, "news");
    await publicTag(t, "offers");
    const active = (await h.subscribers.createSubscriber({ email: "active@example.com", tags: ["news"] }, as(t))).subscriber!;
    const gone = (await h.subscribers.createSubscriber({ email: "gone@example.com", status: SubscriberStatus.UNSUBSCRIBED }, as(t))).subscriber!;
    await h.suppressions.addSuppression({ email: "listed@example.com", reason: 4 /* manual */ }, as(t));
    const erased = (await h.subscribers.createSubscriber({ email: "erased@example.com" }, as(t))).subscriber!;
    await h.subscribers.deleteSubscriber({ id: erased.id }, as(t));

    for (const email of ["active@example.com", "GONE@example.com", "listed@example.com", "erased@example.com"]) {
      const answer = await h.subscribers.signUp({ email, tags: ["offers"], audit: form }, as(t));
      expect(Object.keys(answer).filter((k) => !k.startsWith("$"))).toEqual([]);
    }
    expect((await byEmail(t, "active@example.com")).tags).toEqual(["news"]);
    expect((await byEmail(t, "active@example.com")).updatedAt).toEqual(active.updatedAt);
    expect((await byEmail(t, "gone@example.com")).status).toBe(SubscriberStatus.UNSUBSCRIBED);
    expect((await byEmail(t, "gone@example.com")).updatedAt).toEqual(gone.updatedAt);
    expect((await fail(h.subscribers.getSubscriberByEmail({ email: "listed@example.com" }, as(t)))).code).toBe(Code.NotFound);
    expect((await fail(h.subscribers.getSubscriberByEmail({ email: "erased@example.com" }, as(t)))).code).toBe(Code.NotFound);
  });

  it("refuses tags that are not public (or unknown), a bad address and bad wording, and stores nothing", async () => {
    const t = tenant();
    await h.tags.createTag({ name: "internal" }, as(t));
    const hidden = await fail(h.subscribers.signUp({ email: "eve@example.com", tags: ["internal"] }, as(t)));
    expect(hidden.code).toBe(Code.InvalidArgument);
    expect(hidden.errorCode).toBe("tag_not_public");
    expect((await fail(h.subscribers.signUp({ email: "eve@example.com", tags: ["nope"] }, as(t)))).errorCode).toBe("tag_not_public");
    expect((await fail(h.subscribers.signUp({ email: "not an address" }, as(t)))).errorCode).toBe("validation_failed");
    const wording = await fail(h.subscribers.signUp({ email: "eve@example.com", consent: { text: "x".repeat(2001), version: "", sourceId: "" } }, as(t)));
    expect(wording.fieldViolations.map((v) => v.field)).toEqual(["consent.text"]);
    expect((await h.subscribers.listSubscribers({}, as(t))).subscribers).toEqual([]);
  });

  it("signs up active when the account turned double opt-in off; API creates follow the account only when it says so", async () => {
    const t = tenant();
    const { settings } = await h.subscribers.updateAudienceSettings({ doubleOptIn: false }, as(t));
    expect(settings).toMatchObject({ doubleOptIn: false, doubleOptInForApi: false, confirmationExpirySeconds: 604800 });
    await h.subscribers.signUp({ email: "carl@example.com" }, as(t));
    expect((await byEmail(t, "carl@example.com")).status).toBe(SubscriberStatus.ACTIVE);

    // API creates: active unless the request asks for double opt-in …
    expect((await h.subscribers.createSubscriber({ email: "api1@example.com" }, as(t))).subscriber!.status).toBe(SubscriberStatus.ACTIVE);
    const asked = (await h.subscribers.createSubscriber({ email: "api2@example.com", doubleOptIn: true, consent: { text: "", version: "v1", sourceId: "" } }, as(t))).subscriber!;
    expect(asked.status).toBe(SubscriberStatus.PENDING);
    // … or the account says API creates follow it (a request that sets status itself does not).
    await h.subscribers.updateAudienceSettings({ doubleOptInForApi: true }, as(t));
    expect((await h.subscribers.createSubscriber({ email: "api3@example.com" }, as(t))).subscriber!.status).toBe(SubscriberStatus.PENDING);
    expect((await h.subscribers.createSubscriber({ email: "api4@example.com", status: SubscriberStatus.ACTIVE }, as(t))).subscriber!.status).toBe(SubscriberStatus.ACTIVE);

    // pending comes from double opt-in only.
    expect((await fail(h.subscribers.createSubscriber({ email: "api5@example.com", status: SubscriberStatus.PENDING }, as(t)))).fieldViolations[0]!.field).toBe("status");
    expect((await fail(h.subscribers.createSubscriber({ email: "api5@example.com", status: SubscriberStatus.ACTIVE, doubleOptIn: true }, as(t)))).fieldViolations[0]!.field).toBe("status");
    expect((await fail(h.subscribers.updateSubscriber({ id: asked.id, status: SubscriberStatus.PENDING }, as(t)))).fieldViolations[0]!.field).toBe("status");
    // Settings are per tenant.
    expect((await h.subscribers.getAudienceSettings({}, as(tenant()))).settings!.doubleOptIn).toBe(true);
  });

  it("refuses settings out of range and changes nothing", async () => {
    const t = tenant();
    for (const bad of [{ confirmationExpirySeconds: 0 }, { confirmationExpirySeconds: 91 * 86400 }, { confirmationTemplate: "Not A Slug" }]) {
      const err = await fail(h.subscribers.updateAudienceSettings(bad, as(t)));
      expect(err.code).toBe(Code.InvalidArgument);
    }
    expect((await h.subscribers.getAudienceSettings({}, as(t))).settings).toMatchObject({ confirmationExpirySeconds: 604800, confirmationTemplate: "" });
  });

  it("erases unconfirmed subscribers past the account's deadline, without suppressing the address; confirmed ones stay", async () => {
    const t = tenant();
    await h.subscribers.updateAudienceSettings({ confirmationExpirySeconds: 1 }, as(t));
    await h.subscribers.signUp({ email: "late@example.com", audit: form }, as(t));
    await h.subscribers.signUp({ email: "quick@example.com", audit: form }, as(t));
    const late = await byEmail(t, "late@example.com");
    const quick = await byEmail(t, "quick@example.com");
    await h.subscribers.confirmSubscriber({ subscriberId: quick.id, audit: click }, as(t));
    // Another tenant's pending subscriber with the default week is not touched.
    const other = tenant();
    await h.subscribers.signUp({ email: "late@example.com" }, as(other));

    await waitFor(async () => {
      const err = await h.subscribers.getSubscriber({ id: late.id }, as(t)).then(() => undefined, readError);
      return err?.code === Code.NotFound ? true : undefined;
    }, "the unconfirmed subscriber erased");
    await waitFor(() => h.received.find((e) => e.topic === "subscriber.deleted" && e.key === late.id), "subscriber.deleted");
    expect((await h.subscribers.getSubscriber({ id: quick.id }, as(t))).subscriber!.status).toBe(SubscriberStatus.ACTIVE);
    expect((await byEmail(other, "late@example.com")).status).toBe(SubscriberStatus.PENDING);
    // Not suppressed: the address may sign up (and be created) again.
    expect((await h.suppressions.listSuppressions({}, as(t))).suppressions).toEqual([]);
    await h.subscribers.signUp({ email: "late@example.com" }, as(t));
    expect((await byEmail(t, "late@example.com")).status).toBe(SubscriberStatus.PENDING);
  });

  /** The types of a subscriber's audit records, once the last one expected is written (records of one subscriber are written in order). */
  async function trailUntil(t: ReturnType<typeof tenant>, id: string, last: string): Promise<string[]> {
    return waitFor(async () => {
      const types = (await h.subscribers.listSubscriberEvents({ subscriberId: id, limit: 100 }, as(t))).events.map((e) => e.type);
      return types.includes(last) ? types : undefined;
    }, `the audit record ${last}`);
  }

  it("does not mail a pending subscriber who signs up again within the hour; the confirmation mail is in the trail once", async () => {
    const t = tenant();
    await h.subscribers.signUp({ email: "twice@example.com", audit: form }, as(t));
    await h.subscribers.signUp({ email: "twice@example.com", audit: form }, as(t));
    const id = (await byEmail(t, "twice@example.com")).id;
    await h.subscribers.confirmSubscriber({ subscriberId: id, audit: click }, as(t));
    const trail = await trailUntil(t, id, "subscriber.status_changed");
    expect(trail.filter((type) => type === "subscriber.confirmation_sent")).toHaveLength(1);
  });

  describe("with the resend interval passed", () => {
    let quick: Harness;
    beforeAll(async () => {
      quick = await startHarness(kind, { confirmationResendAfterMs: 0 });
    });
    afterAll(async () => {
      await quick?.close();
    });

    it("mails a pending subscriber who signs up again once more, and an active one nothing", async () => {
      const t = tenant();
      await quick.subscribers.signUp({ email: "lost-mail@example.com" }, as(t));
      const pending = (await quick.subscribers.getSubscriberByEmail({ email: "lost-mail@example.com" }, as(t))).subscriber!;
      await quick.subscribers.signUp({ email: "lost-mail@example.com" }, as(t));
      await quick.subscribers.confirmSubscriber({ subscriberId: pending.id }, as(t));
      await quick.subscribers.signUp({ email: "lost-mail@example.com" }, as(t));
      await quick.subscribers.addTags({ subscriberId: pending.id, tags: ["marker"] }, as(t));
      const types = await waitFor(async () => {
        const list = (await quick.subscribers.listSubscriberEvents({ subscriberId: pending.id, limit: 100 }, as(t))).events.map((e) => e.type);
        return list.includes("subscriber.tag_added") ? list : undefined;
      }, "the marker's audit record");
      expect(types).toEqual(["subscriber.created", "subscriber.confirmation_sent", "subscriber.confirmation_sent", "subscriber.status_changed", "subscriber.tag_added"]);
    });
  });
});
