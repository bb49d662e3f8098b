import { Code, ConnectError } from "@connectrpc/connect";
import { fromBinary } from "@bufbuild/protobuf";
import { events, SubscriberStatus, UnsubscribeAllOutcome } from "@emailsvc/proto";
import { readError } from "@emailsvc/errors";
import { newId } from "@emailsvc/ids";
import { as, startHarness, tenant, waitFor, type Harness, type StoreKind } from "./harness.js";

async function code(promise: Promise<unknown>): Promise<Code> {
  try {
    await promise;
  } catch (err) {
    return ConnectError.from(err).code;
  }
  throw new Error("expected the call to fail");
}

describe.each<StoreKind>(["embedded", "mongodb"])("subscribers service over gRPC on %s storage", (kind) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(kind);
  });
  afterAll(async () => {
    await h?.close();
  });

  it("creates, reads, finds by email case-insensitively, and creates unknown tags", async () => {
    const t = tenant();
    const { subscriber } = await h.subscribers.createSubscriber(
      { email: "Ada@Example.com", tags: ["news", "VIP"], metadata: { plan: "pro", seats: 3 } },
      as(t),
    );
    expect(subscriber!.id).toMatch(/^sub_[0-9a-z]{26}$/);
    expect(subscriber!.email).toBe("Ada@Example.com");
    expect(subscriber!.status).toBe(SubscriberStatus.ACTIVE);
    expect(subscriber!.tags).toEqual(["news", "VIP"]);
    expect(subscriber!.metadata).toEqual({ plan: "pro", seats: 3 });

    const got = await h.subscribers.getSubscriber({ id: subscriber!.id }, as(t));
    expect(got.subscriber).toEqual(subscriber);
    const byEmail = await h.subscribers.getSubscriberByEmail({ email: "ada@EXAMPLE.com" }, as(t));
    expect(byEmail.subscriber!.id).toBe(subscriber!.id);

    const tags = await h.tags.listTags({}, as(t));
    expect(tags.tags.map((x) => x.name).sort()).toEqual(["VIP", "news"]);
    expect(tags.tags.every((x) => x.isPublic === false)).toBe(true);
  });

  it("rejects a duplicate email (any case) naming the existing subscriber, and changes nothing", async () => {
    const t = tenant();
    const first = await h.subscribers.createSubscriber({ email: "bob@example.com" }, as(t));
    const err = await h.subscribers.createSubscriber({ email: "BOB@example.com", tags: ["fresh-tag"] }, as(t)).catch((e) => e);
    const info = readError(err);
    expect(info.code).toBe(Code.AlreadyExists);
    expect(info.errorCode).toBe("email_taken");
    expect(info.existingId).toBe(first.subscriber!.id);
    expect((await h.tags.listTags({}, as(t))).tags).toEqual([]);
    expect((await h.subscribers.listSubscribers({}, as(t))).subscribers).toHaveLength(1);
  });

  it("lets exactly one of concurrent creates of one email win", async () => {
    const t = tenant();
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, () => h.subscribers.createSubscriber({ email: "race@example.com" }, as(t))),
    );
    const won = results.filter((r) => r.status === "fulfilled");
    expect(won).toHaveLength(1);
    const winnerId = (won[0] as PromiseFulfilledResult<{ subscriber?: { id: string } }>).value.subscriber!.id;
    for (const r of results) {
      if (r.status === "rejected") {
        const info = readError(r.reason);
        expect(info.code).toBe(Code.AlreadyExists);
        expect(info.existingId).toBe(winnerId);
      }
    }
  });

  it("validates input and changes nothing on bad input", async () => {
    const t = tenant();
    expect(await code(h.subscribers.createSubscriber({ email: "" }, as(t)))).toBe(Code.InvalidArgument);
    expect(await code(h.subscribers.createSubscriber({ email: "not-an-email" }, as(t)))).toBe(Code.InvalidArgument);
    expect(await code(h.subscribers.createSubscriber({ email: "a@b.co", metadata: { "bad.key": 1 } }, as(t)))).toBe(Code.InvalidArgument);
    const big = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`k${i}`, "x".repeat(400)]));
    expect(await code(h.subscribers.createSubscriber({ email: "a@b.co", metadata: big }, as(t)))).toBe(Code.ResourceExhausted);
    expect(await code(h.subscribers.createSubscriber({ email: "a@b.co", tags: ["ok", "bad/name"] }, as(t)))).toBe(Code.InvalidArgument);
    expect((await h.subscribers.listSubscribers({}, as(t))).subscribers).toEqual([]);
    expect((await h.tags.listTags({}, as(t))).tags).toEqual([]);
  });

  it("keeps tenants apart: another account's or mode's id is not found", async () => {
    const owner = tenant("live");
    const { subscriber } = await h.subscribers.createSubscriber({ email: "iso@example.com" }, as(owner));
    const otherAccount = tenant("live");
    const otherMode = tenant("test", owner.tenant.accountId);
    for (const t of [otherAccount, otherMode]) {
      expect(await code(h.subscribers.getSubscriber({ id: subscriber!.id }, as(t)))).toBe(Code.NotFound);
      expect(await code(h.subscribers.deleteSubscriber({ id: subscriber!.id }, as(t)))).toBe(Code.NotFound);
      expect(await code(h.subscribers.getSubscriberByEmail({ email: "iso@example.com" }, as(t)))).toBe(Code.NotFound);
      // The same address is free in another tenant.
      await h.subscribers.createSubscriber({ email: "iso@example.com" }, as(t));
    }
    expect(await code(h.subscribers.getSubscriber({ id: subscriber!.id }, { headers: {} }))).toBe(Code.Unauthenticated);
  });

  it("pages through subscribers with a cursor, filters by status, and rejects a tampered cursor", async () => {
    const t = tenant();
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) {
      const { subscriber } = await h.subscribers.createSubscriber(
        { email: `page${i}@example.com`, status: i % 2 ? SubscriberStatus.UNSUBSCRIBED : SubscriberStatus.ACTIVE },
        as(t),
      );
      ids.push(subscriber!.id);
    }
    const seen: string[] = [];
    let cursor = "";
    do {
      const page = await h.subscribers.listSubscribers({ limit: 3, cursor }, as(t));
      expect(page.subscribers.length).toBeLessThanOrEqual(3);
      seen.push(...page.subscribers.map((s) => s.id));
      cursor = page.nextCursor;
    } while (cursor);
    expect(seen).toEqual(ids);

    const active = await h.subscribers.listSubscribers({ status: SubscriberStatus.ACTIVE, limit: 500 }, as(t));
    expect(active.subscribers.map((s) => s.id)).toEqual(ids.filter((_, i) => i % 2 === 0));
    expect(active.nextCursor).toBe("");

    const first = await h.subscribers.listSubscribers({ limit: 2 }, as(t));
    const tampered = Buffer.from(JSON.stringify({ v: 1, after: "sub_nope", filter: "" })).toString("base64url");
    expect(await code(h.subscribers.listSubscribers({ cursor: tampered }, as(t)))).toBe(Code.InvalidArgument);
    expect(await code(h.subscribers.listSubscribers({ cursor: first.nextCursor + "x" }, as(t)))).toBe(Code.InvalidArgument);
    // A cursor made for one filter is not accepted for another.
    expect(await code(h.subscribers.listSubscribers({ cursor: first.nextCursor, status: SubscriberStatus.ACTIVE }, as(t)))).toBe(Code.InvalidArgument);
    expect(await code(h.subscribers.listSubscribers({ limit: 501 }, as(t)))).toBe(Code.InvalidArgument);
    expect(await code(h.subscribers.listSubscribers({ limit: -1 }, as(t)))).toBe(Code.InvalidArgument);
  });

  it("finds subscribers by address prefix ignoring case and by tag, with the status, across pages; tags count their members", async () => {
    const t = tenant();
    const other = tenant();
    const made = async (email: string, tags: string[], status = SubscriberStatus.ACTIVE) =>
      (await h.subscribers.createSubscriber({ email, tags, status }, as(t))).subscriber!.id;
    const anna = await made("Anna@example.com", ["VIP", "news"]);
    const annika = await made("annika@example.org", ["news"], SubscriberStatus.UNSUBSCRIBED);
    const ann3 = await made("ann.three@example.net", ["news"]);
    const bob = await made("bob@example.com", ["VIP"]);
    await made("zed@example.com", []);
    // Another tenant's "ann…" holding its own "news" is never found.
    await h.subscribers.createSubscriber({ email: "ann@other.example", tags: ["news"] }, as(other));

    const all = async (filter: { emailPrefix?: string; tag?: string; status?: SubscriberStatus }, limit = 500) => {
      const ids: string[] = [];
      let cursor = "";
      do {
        const page = await h.subscribers.listSubscribers({ ...filter, limit, cursor }, as(t));
        ids.push(...page.subscribers.map((s) => s.id));
        cursor = page.nextCursor;
      } while (cursor);
      return ids;
    };
    expect(await all({ emailPrefix: "ANN" })).toEqual([anna, annika, ann3]);
    expect(await all({ emailPrefix: "ann" }, 1)).toEqual([anna, annika, ann3]);
    expect(await all({ emailPrefix: "anna@" })).toEqual([anna]);
    expect(await all({ emailPrefix: "nobody" })).toEqual([]);
    expect(await all({ tag: "vip" })).toEqual([anna, bob]);
    expect(await all({ tag: "news", emailPrefix: "ann", status: SubscriberStatus.ACTIVE })).toEqual([anna, ann3]);
    expect(await all({ tag: "news" }, 2)).toEqual([anna, annika, ann3]);
    expect(await all({ tag: "no-such-tag" })).toEqual([]);

    // A cursor belongs to its filter.
    const first = await h.subscribers.listSubscribers({ emailPrefix: "ann", limit: 1 }, as(t));
    expect(await code(h.subscribers.listSubscribers({ emailPrefix: "anna", cursor: first.nextCursor }, as(t)))).toBe(Code.InvalidArgument);
    expect(await code(h.subscribers.listSubscribers({ tag: "news", cursor: first.nextCursor }, as(t)))).toBe(Code.InvalidArgument);
    expect(await code(h.subscribers.listSubscribers({ emailPrefix: "a".repeat(255) }, as(t)))).toBe(Code.InvalidArgument);
    // A long prefix of multi-byte characters still pages (its cursor stays short).
    const long = "é".repeat(254);
    expect((await h.subscribers.listSubscribers({ emailPrefix: long, limit: 1 }, as(t))).subscribers).toEqual([]);
    const pageOfTwo = await h.subscribers.listSubscribers({ emailPrefix: "ANN", tag: "news", status: SubscriberStatus.ACTIVE, limit: 1 }, as(t));
    expect(pageOfTwo.nextCursor).not.toContain("ann");
    expect(Buffer.from(pageOfTwo.nextCursor, "base64url").toString()).not.toContain("ann");
    expect(await code(h.subscribers.listSubscribers({ emailPrefix: "an\u0000n" }, as(t)))).toBe(Code.InvalidArgument);

    const counts = async () => Object.fromEntries((await h.tags.listTags({}, as(t))).tags.map((x) => [x.name, Number(x.subscriberCount)]));
    expect(await counts()).toEqual({ VIP: 2, news: 3 });
    const vip = (await h.tags.listTags({}, as(t))).tags.find((x) => x.name === "VIP")!;
    expect(Number((await h.tags.getTag({ id: vip.id }, as(t))).tag!.subscriberCount)).toBe(2);
    // Erased and untagged subscribers leave the count.
    await h.subscribers.deleteSubscriber({ id: anna }, as(t));
    await h.subscribers.removeTag({ subscriberId: bob, tagName: "VIP" }, as(t));
    expect(await counts()).toEqual({ VIP: 0, news: 2 });
    expect(Number((await h.tags.createTag({ name: "fresh" }, as(t))).tag!.subscriberCount)).toBe(0);
  });

  it("adds tags without replacing, removes one tag, and updates email, status and metadata", async () => {
    const t = tenant();
    const { subscriber } = await h.subscribers.createSubscriber({ email: "tags@example.com", tags: ["a"], metadata: { x: 1, y: "keep" } }, as(t));
    const id = subscriber!.id;
    let s = (await h.subscribers.addTags({ subscriberId: id, tags: ["b", "A", "c"] }, as(t))).subscriber!;
    expect(s.tags).toEqual(["a", "b", "c"]);
    s = (await h.subscribers.removeTag({ subscriberId: id, tagName: "B" }, as(t))).subscriber!;
    expect(s.tags).toEqual(["a", "c"]);
    expect(await code(h.subscribers.removeTag({ subscriberId: id, tagName: "b" }, as(t)))).toBe(Code.NotFound);

    s = (
      await h.subscribers.updateSubscriber(
        { id, email: "New@Example.com", status: SubscriberStatus.BOUNCED, metadata: { x: null, z: true } },
        as(t),
      )
    ).subscriber!;
    expect(s.email).toBe("New@Example.com");
    expect(s.status).toBe(SubscriberStatus.BOUNCED);
    expect(s.metadata).toEqual({ y: "keep", z: true });
    expect((await h.subscribers.getSubscriberByEmail({ email: "new@example.com" }, as(t))).subscriber!.id).toBe(id);
    expect(await code(h.subscribers.getSubscriberByEmail({ email: "tags@example.com" }, as(t)))).toBe(Code.NotFound);

    const other = await h.subscribers.createSubscriber({ email: "other@example.com" }, as(t));
    const clash = readError(await h.subscribers.updateSubscriber({ id: other.subscriber!.id, email: "NEW@example.com" }, as(t)).catch((e) => e));
    expect(clash.code).toBe(Code.AlreadyExists);
    expect(clash.existingId).toBe(id);
  });

  it("deleting a tag removes it from every member, each removal in the member's audit trail", async () => {
    const t = tenant();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await h.subscribers.createSubscriber({ email: `m${i}@example.com`, tags: ["doomed", "kept"] }, as(t))).subscriber!.id);
    const tag = (await h.tags.listTags({}, as(t))).tags.find((x) => x.name === "doomed")!;
    await h.tags.deleteTag({ id: tag.id }, as(t));
    expect(await h.store.collection("subscribers").count({ tag_ids: tag.id })).toBe(0);
    for (const id of ids) {
      expect((await h.subscribers.getSubscriber({ id }, as(t))).subscriber!.tags).toEqual(["kept"]);
      const trail = await waitFor(async () => {
        const r = await h.subscribers.listSubscriberEvents({ subscriberId: id }, as(t));
        return r.events.some((e) => e.type === "subscriber.tag_removed") ? r : undefined;
      }, "the tag_removed audit record");
      expect(trail.events.find((e) => e.type === "subscriber.tag_removed")!.data).toMatchObject({ tag: "doomed", reason: "tag_deleted" });
    }
  });

  it("writes every subscription change to the audit trail with time and actor, and no address", async () => {
    const t = tenant();
    const before = Date.now();
    const { subscriber } = await h.subscribers.createSubscriber({ email: "trail@example.com", tags: ["t1"] }, as(t));
    const id = subscriber!.id;
    await h.subscribers.addTags({ subscriberId: id, tags: ["t2"] }, as(t));
    await h.subscribers.removeTag({ subscriberId: id, tagName: "t1" }, as(t));
    await h.subscribers.updateSubscriber({ id, status: SubscriberStatus.UNSUBSCRIBED }, as(t));
    const trail = await h.subscribers.listSubscriberEvents({ subscriberId: id }, as(t));
    expect(trail.events.map((e) => e.type)).toEqual([
      "subscriber.created",
      "subscriber.tag_added",
      "subscriber.tag_removed",
      "subscriber.status_changed",
    ]);
    for (const e of trail.events) {
      expect(e.actor).toBe("api_key:key_test");
      expect(Number(e.occurredAt!.seconds) * 1000).toBeGreaterThanOrEqual(before - 1000);
      expect(JSON.stringify(e.data)).not.toContain("trail@example.com");
    }
    expect(trail.events[3]!.data).toEqual({ from: "active", to: "unsubscribed" });
    expect(trail.events[1]!.data).toMatchObject({ tag: "t2" });
    // Another tenant cannot read it.
    expect(await code(h.subscribers.listSubscriberEvents({ subscriberId: id }, as(tenant())))).toBe(Code.NotFound);
  });

  it("emits subscriber.created with ids only, never the address or metadata", async () => {
    const t = tenant();
    const { subscriber } = await h.subscribers.createSubscriber({ email: "evt@example.com", tags: ["x"], metadata: { secret: "m-value" } }, as(t));
    const id = subscriber!.id;
    const event = await waitFor(() => h.received.find((e) => e.topic === "subscriber.created" && e.key === id), "subscriber.created");
    const decoded = fromBinary(events.SubscriberCreatedSchema, event.value);
    expect(decoded.subscriberId).toBe(id);
    expect(decoded.meta!.accountId).toBe(t.tenant.accountId);
    expect(decoded.meta!.mode).toBe("test");
    expect(decoded.tagIds).toHaveLength(1);
    // The status it was created with: a record created unsubscribed did not sign up (no welcome trigger).
    expect(decoded.status).toBe(SubscriberStatus.ACTIVE);
    const raw = Buffer.from(event.value).toString("latin1") + JSON.stringify(event.headers);
    expect(raw).not.toContain("evt@example.com");
    expect(raw).not.toContain("m-value");
    const optedOut = (await h.subscribers.createSubscriber({ email: "optout@example.com", status: SubscriberStatus.UNSUBSCRIBED }, as(t))).subscriber!.id;
    const second = await waitFor(() => h.received.find((e) => e.topic === "subscriber.created" && e.key === optedOut), "subscriber.created");
    expect(fromBinary(events.SubscriberCreatedSchema, second.value).status).toBe(SubscriberStatus.UNSUBSCRIBED);
  });

  it("deletes permanently: data, tag links and history; the address is free again, for a resubscribe", async () => {
    const t = tenant();
    const { subscriber } = await h.subscribers.createSubscriber({ email: "gone@example.com", tags: ["g"] }, as(t));
    const id = subscriber!.id;
    await h.subscribers.deleteSubscriber({ id }, as(t));
    expect(await code(h.subscribers.getSubscriber({ id }, as(t)))).toBe(Code.NotFound);
    expect(await code(h.subscribers.listSubscriberEvents({ subscriberId: id }, as(t)))).toBe(Code.NotFound);
    expect(await code(h.subscribers.deleteSubscriber({ id }, as(t)))).toBe(Code.NotFound);
    await waitFor(() => h.received.find((e) => e.topic === "subscriber.deleted" && e.key === id), "subscriber.deleted");
    // Nothing of the subscriber is stored any more, not even a tombstone.
    await waitFor(async () => ((await h.store.collection("subscribers").count({ _id: id })) === 0 ? true : undefined), "tombstone removal");
    expect(await h.store.collection("subscriber_events").count({ subscriber_id: id })).toBe(0);
    // Suppressed (privacy.test.ts): back only when the person opted in again.
    const again = await h.subscribers.createSubscriber({ email: "gone@example.com", resubscribe: true, resubscribeReason: "signed up again" }, as(t));
    expect(again.subscriber!.id).not.toBe(id);
  });

  it("finishes an outbox left behind by a crash: the event is published and audited once", async () => {
    const t = tenant();
    const accountTenant = `${t.tenant.accountId}:test`;
    const id = newId("sub");
    const eventId = newId("evt");
    await h.store.collection("subscribers").insertOne({
      _id: id,
      tenant: accountTenant,
      email: "crash@example.com",
      email_key: "crash@example.com",
      status: "active",
      metadata: {},
      tag_ids: [],
      created_at: Date.now() - 60000,
      updated_at: Date.now() - 60000,
      deleted: false,
      version: 1,
      outbox: [{ id: eventId, type: "subscriber.created", at: Date.now() - 60000, actor: "api_key:key_test", audit: { status: "active", tags: [] }, bus: { topic: "subscriber.created", tag_ids: [] } }],
      outbox_pending: true,
    });
    await waitFor(() => h.received.find((e) => e.key === id), "the swept event");
    const trail = await waitFor(async () => {
      const r = await h.subscribers.listSubscriberEvents({ subscriberId: id }, as(t));
      return r.events.length > 0 ? r : undefined;
    }, "the swept audit record");
    expect(trail.events.map((e) => e.id)).toEqual([eventId]);
    await waitFor(async () => ((await h.store.collection("subscribers").findOne({ _id: id }))?.outbox_pending === false ? true : undefined), "outbox cleared");
  });

  describe("UnsubscribeAll: the one 'unsubscribe from everything' of the portal and the one-click link", () => {
    it("unsubscribes an active subscriber and leaves every public tag in one write, audited with its source; private tags stay; a repeat changes nothing", async () => {
      const t = tenant();
      const { subscriber } = await h.subscribers.createSubscriber({ email: "all@example.com", tags: ["weekly", "offers", "segment"] }, as(t));
      const tags = (await h.tags.listTags({}, as(t))).tags;
      for (const tag of tags.filter((x) => x.name !== "segment")) await h.tags.updateTag({ id: tag.id, isPublic: true }, as(t));
      const audit = { source: "one_click", ip: "203.0.113.9", userAgent: "Mail" };
      const res = await h.subscribers.unsubscribeAll({ recipient: { case: "subscriberId", value: subscriber!.id }, audit }, as(t));
      expect(res.outcome).toBe(UnsubscribeAllOutcome.UNSUBSCRIBED);
      expect({ status: res.subscriber!.status, tags: res.subscriber!.tags }).toEqual({ status: SubscriberStatus.UNSUBSCRIBED, tags: ["segment"] });
      const trail = await waitFor(async () => {
        const events = (await h.subscribers.listSubscriberEvents({ subscriberId: subscriber!.id }, as(t))).events;
        return events.length === 4 ? events : undefined;
      }, "the audit trail");
      expect(trail.slice(1).map((e) => [e.type, e.source, e.ip])).toEqual([
        ["subscriber.status_changed", "one_click", "203.0.113.9"],
        ["subscriber.tag_removed", "one_click", "203.0.113.9"],
        ["subscriber.tag_removed", "one_click", "203.0.113.9"],
      ]);
      const again = await h.subscribers.unsubscribeAll({ recipient: { case: "subscriberId", value: subscriber!.id }, audit }, as(t));
      expect(again.outcome).toBe(UnsubscribeAllOutcome.ALREADY_UNSUBSCRIBED);
      expect((await h.subscribers.listSubscriberEvents({ subscriberId: subscriber!.id }, as(t))).events).toHaveLength(4);
    });

    it("keeps a bounced or complained status and records the opt-out, which stands when the status is set active later", async () => {
      const t = tenant();
      for (const status of [SubscriberStatus.BOUNCED, SubscriberStatus.COMPLAINED]) {
        const { subscriber } = await h.subscribers.createSubscriber({ email: `verdict-${status}@example.com` }, as(t));
        const id = subscriber!.id;
        await h.subscribers.updateSubscriber({ id, status }, as(t));
        const res = await h.subscribers.unsubscribeAll({ recipient: { case: "subscriberId", value: id }, audit: { source: "portal", ip: "", userAgent: "" } }, as(t));
        expect({ outcome: res.outcome, status: res.subscriber!.status }).toEqual({ outcome: UnsubscribeAllOutcome.OPT_OUT_RECORDED, status });
        expect((await h.subscribers.unsubscribeAll({ recipient: { case: "subscriberId", value: id } }, as(t))).outcome).toBe(UnsubscribeAllOutcome.ALREADY_UNSUBSCRIBED);
        // Lifting the verdict does not undo the person's choice; once it is the status, active is the integrator's call again.
        expect((await h.subscribers.updateSubscriber({ id, status: SubscriberStatus.ACTIVE }, as(t))).subscriber!.status).toBe(SubscriberStatus.UNSUBSCRIBED);
        expect((await h.subscribers.updateSubscriber({ id, status: SubscriberStatus.ACTIVE }, as(t))).subscriber!.status).toBe(SubscriberStatus.ACTIVE);
        const trail = await waitFor(async () => {
          const events = (await h.subscribers.listSubscriberEvents({ subscriberId: id }, as(t))).events;
          return events.length === 5 ? events : undefined;
        }, "the audit trail");
        expect(trail.map((e) => e.type)).toEqual(["subscriber.created", "subscriber.status_changed", "subscriber.opted_out", "subscriber.status_changed", "subscriber.status_changed"]);
        expect(trail[3]!.data).toMatchObject({ to: "unsubscribed", asked: "active", reason: "opted_out" });
        // The export lists the opt-out once, when the person made it.
        const consent = JSON.parse((await h.subscribers.exportSubscriberData({ subscriberId: id }, as(t))).json).consent as Array<{ action: string; event_id: string }>;
        expect(consent.map((c) => [c.action, c.event_id])).toEqual([
          ["opt_in", trail[0]!.id],
          ["opt_out", trail[2]!.id],
          ["opt_in", trail[4]!.id],
        ]);
      }
    });

    it("records an address that is nobody's as an unsubscribed subscriber, finds one that is, and stores nothing for a suppressed one", async () => {
      const t = tenant();
      const res = await h.subscribers.unsubscribeAll({ recipient: { case: "email", value: "Stranger@Example.com" } }, as(t));
      expect({ outcome: res.outcome, status: res.subscriber!.status, email: res.subscriber!.email }).toEqual({
        outcome: UnsubscribeAllOutcome.ADDRESS_RECORDED,
        status: SubscriberStatus.UNSUBSCRIBED,
        email: "Stranger@Example.com",
      });
      expect((await h.subscribers.unsubscribeAll({ recipient: { case: "email", value: "stranger@example.com" } }, as(t))).outcome).toBe(UnsubscribeAllOutcome.ALREADY_UNSUBSCRIBED);
      const { subscriber } = await h.subscribers.createSubscriber({ email: "erased@example.com" }, as(t));
      await h.subscribers.deleteSubscriber({ id: subscriber!.id }, as(t));
      const suppressed = await h.subscribers.unsubscribeAll({ recipient: { case: "email", value: "erased@example.com" } }, as(t));
      expect({ outcome: suppressed.outcome, subscriber: suppressed.subscriber }).toEqual({ outcome: UnsubscribeAllOutcome.ADDRESS_SUPPRESSED, subscriber: undefined });
      expect(await code(h.subscribers.unsubscribeAll({ recipient: { case: "subscriberId", value: subscriber!.id } }, as(t)))).toBe(Code.NotFound);
      expect(await code(h.subscribers.unsubscribeAll({ recipient: { case: "email", value: "not an address" } }, as(t)))).toBe(Code.InvalidArgument);
    });
  });
});
