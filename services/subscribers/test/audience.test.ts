import { Code } from "@connectrpc/connect";
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { ListValueSchema, ValueSchema } from "@bufbuild/protobuf/wkt";
import { AudienceFilter_Match as Match, MailingBlock, SubscriberStatus, type AudienceFilterSchema } from "@emailsvc/proto";
import { readError } from "@emailsvc/errors";
import { newId } from "@emailsvc/ids";
import type { CallContext } from "@emailsvc/tenancy";
import { as, startHarness, tenant, type Harness, type StoreKind } from "./harness.js";

type Filter = MessageInitShape<typeof AudienceFilterSchema>;
type Scalar = string | number | boolean;

const equals = (key: string, value: Scalar | null) => ({ key, condition: { case: "equals" as const, value: value_(value) } });
const oneOf = (key: string, values: Array<Scalar | null>) => ({
  key,
  condition: { case: "in" as const, value: create(ListValueSchema, { values: values.map(value_) }) },
});
const exists = (key: string, yes: boolean) => ({ key, condition: { case: "exists" as const, value: yes } });

function value_(v: Scalar | null) {
  if (v === null) return create(ValueSchema, { kind: { case: "nullValue", value: 0 } });
  if (typeof v === "string") return create(ValueSchema, { kind: { case: "stringValue", value: v } });
  if (typeof v === "number") return create(ValueSchema, { kind: { case: "numberValue", value: v } });
  return create(ValueSchema, { kind: { case: "boolValue", value: v } });
}

describe.each<StoreKind>(["embedded", "mongodb"])("audience of a filter on %s storage", (kind) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(kind);
  });
  afterAll(async () => {
    await h?.close();
  });

  /** Every id of the audience, walking ListAudience `limit` at a time; checks order, uniqueness and the count. */
  async function audience(t: CallContext, filter: Filter, limit = 2): Promise<string[]> {
    const ids: string[] = [];
    let after = "";
    for (let pages = 0; ; pages++) {
      expect(pages).toBeLessThan(1000);
      const page = await h.audience.listAudience({ filter, afterSubscriberId: after, limit }, as(t));
      expect(page.subscriberIds.length).toBeLessThanOrEqual(limit);
      ids.push(...page.subscriberIds);
      if (!page.nextAfter) break;
      expect(page.subscriberIds).toHaveLength(limit);
      expect(page.nextAfter).toBe(page.subscriberIds[page.subscriberIds.length - 1]);
      after = page.nextAfter;
    }
    expect(ids).toEqual([...new Set(ids)].sort());
    const { count } = await h.audience.countAudience({ filter }, as(t));
    expect(Number(count)).toBe(ids.length);
    return ids;
  }

  async function subscriber(
    t: CallContext,
    email: string,
    tags: string[],
    metadata: Record<string, Scalar> = {},
    status = SubscriberStatus.ACTIVE,
  ): Promise<string> {
    const { subscriber } = await h.subscribers.createSubscriber({ email, tags, metadata, status }, as(t));
    return subscriber!.id;
  }

  async function failure(promise: Promise<unknown>) {
    const err = await promise.then(
      () => undefined,
      (e: unknown) => e,
    );
    if (err === undefined) throw new Error("expected the call to fail");
    return readError(err);
  }

  describe("one tenant's subscribers", () => {
    const t = tenant();
    const id: Record<string, string> = {};
    beforeAll(async () => {
      id.a = await subscriber(t, "a@example.com", ["news", "vip"], { plan: "pro", seats: 3 });
      id.b = await subscriber(t, "b@example.com", ["news"], { plan: "free" });
      id.c = await subscriber(t, "c@example.com", ["VIP"], { plan: "pro", beta: true });
      id.d = await subscriber(t, "d@example.com", ["news", "vip", "churn"], { seats: 10 });
      id.e = await subscriber(t, "e@example.com", [], { plan: "pro" });
      // Not active: never in an audience, whatever they hold.
      await subscriber(t, "f@example.com", ["news", "vip"], { plan: "pro", seats: 3, beta: true }, SubscriberStatus.UNSUBSCRIBED);
      await subscriber(t, "g@example.com", ["news", "vip"], { plan: "pro", seats: 3, beta: true }, SubscriberStatus.BOUNCED);
      await subscriber(t, "h@example.com", ["news", "vip"], { plan: "pro", seats: 3, beta: true }, SubscriberStatus.COMPLAINED);
      // Deleted through the API.
      const gone = await subscriber(t, "i@example.com", ["news", "vip"], { plan: "pro", seats: 3, beta: true });
      await h.subscribers.deleteSubscriber({ id: gone }, as(t));
      // A tombstone that stays (as when the relay has not removed it yet), still
      // holding tags, metadata and status active: only `deleted` keeps it out.
      const tagIds = (await h.tags.listTags({ limit: 100 }, as(t))).tags.filter((x) => x.name !== "churn").map((x) => x.id);
      await h.store.collection("subscribers").insertOne({
        _id: newId("sub"),
        tenant: `${t.tenant.accountId}:${t.tenant.mode}`,
        email: "",
        email_key: `deleted:${newId("sub")}`,
        status: "active",
        metadata: { plan: "pro", seats: 3, beta: true },
        tag_ids: tagIds,
        created_at: Date.now(),
        updated_at: Date.now(),
        deleted: true,
        version: 1,
        outbox: [],
        outbox_pending: false,
      });
      await h.tags.createTag({ name: "nobody" }, as(t));
    });

    const sorted = (...names: string[]) => names.map((n) => id[n]!).sort();

    it("an empty filter is every active subscriber", async () => {
      expect(await audience(t, {})).toEqual(sorted("a", "b", "c", "d", "e"));
    });

    it("include_tags with match any (and unspecified): at least one of them, names ignoring case", async () => {
      expect(await audience(t, { includeTags: ["news"] })).toEqual(sorted("a", "b", "d"));
      expect(await audience(t, { includeTags: ["news", "vip"], match: Match.ANY })).toEqual(sorted("a", "b", "c", "d"));
      expect(await audience(t, { includeTags: ["Vip"], match: Match.UNSPECIFIED })).toEqual(sorted("a", "c", "d"));
      expect(await audience(t, { includeTags: ["nobody"] })).toEqual([]);
    });

    it("include_tags with match all: every one of them", async () => {
      expect(await audience(t, { includeTags: ["NEWS", "vip"], match: Match.ALL })).toEqual(sorted("a", "d"));
      expect(await audience(t, { includeTags: ["news", "vip", "churn"], match: Match.ALL })).toEqual(sorted("d"));
      expect(await audience(t, { includeTags: ["vip", "VIP"], match: Match.ALL })).toEqual(sorted("a", "c", "d"));
      expect(await audience(t, { includeTags: ["news", "nobody"], match: Match.ALL })).toEqual([]);
    });

    it("exclude_tags leaves out anyone holding any of them", async () => {
      expect(await audience(t, { excludeTags: ["vip"] })).toEqual(sorted("b", "e"));
      expect(await audience(t, { excludeTags: ["churn", "news"] })).toEqual(sorted("c", "e"));
      expect(await audience(t, { includeTags: ["news", "vip"], match: Match.ALL, excludeTags: ["churn"] })).toEqual(sorted("a"));
      expect(await audience(t, { includeTags: ["news", "vip"], match: Match.ANY, excludeTags: ["churn"] })).toEqual(sorted("a", "b", "c"));
      expect(await audience(t, { includeTags: ["news"], excludeTags: ["news"] })).toEqual([]);
      expect(await audience(t, { excludeTags: ["nobody"] })).toEqual(sorted("a", "b", "c", "d", "e"));
    });

    it("metadata equals: the same type and value", async () => {
      expect(await audience(t, { metadata: [equals("plan", "pro")] })).toEqual(sorted("a", "c", "e"));
      expect(await audience(t, { metadata: [equals("plan", "PRO")] })).toEqual([]);
      expect(await audience(t, { metadata: [equals("seats", 3)] })).toEqual(sorted("a"));
      expect(await audience(t, { metadata: [equals("seats", "3")] })).toEqual([]);
      expect(await audience(t, { metadata: [equals("beta", true)] })).toEqual(sorted("c"));
      expect(await audience(t, { metadata: [equals("beta", false)] })).toEqual([]);
    });

    it("metadata in: one of the values", async () => {
      expect(await audience(t, { metadata: [oneOf("plan", ["pro", "free"])] })).toEqual(sorted("a", "b", "c", "e"));
      expect(await audience(t, { metadata: [oneOf("seats", [10, 3])] })).toEqual(sorted("a", "d"));
      expect(await audience(t, { metadata: [oneOf("plan", ["enterprise", 3, true])] })).toEqual([]);
    });

    it("metadata exists true and false", async () => {
      expect(await audience(t, { metadata: [exists("plan", true)] })).toEqual(sorted("a", "b", "c", "e"));
      expect(await audience(t, { metadata: [exists("plan", false)] })).toEqual(sorted("d"));
      expect(await audience(t, { metadata: [exists("nowhere", false)] })).toEqual(sorted("a", "b", "c", "d", "e"));
      expect(await audience(t, { metadata: [exists("nowhere", true)] })).toEqual([]);
    });

    it("every part ANDed", async () => {
      expect(await audience(t, { metadata: [equals("plan", "pro"), exists("seats", true)] })).toEqual(sorted("a"));
      expect(
        await audience(t, {
          includeTags: ["vip"],
          excludeTags: ["churn"],
          metadata: [equals("plan", "pro"), exists("seats", false)],
        }),
      ).toEqual(sorted("c"));
      expect(
        await audience(t, {
          includeTags: ["news", "vip"],
          match: Match.ALL,
          metadata: [oneOf("seats", [3, 10]), exists("plan", true)],
        }),
      ).toEqual(sorted("a"));
    });

    it("count and list agree for every shape", async () => {
      const { count } = await h.audience.countAudience({ filter: { includeTags: ["vip"], excludeTags: ["news"] } }, as(t));
      expect(count).toBe(1n);
      expect((await h.audience.countAudience({ filter: {} }, as(t))).count).toBe(5n);
    });

    it("a tag name that is no tag of the tenant is INVALID_ARGUMENT naming each one, for count and list", async () => {
      const filter: Filter = { includeTags: ["news", "nope", "Nope"], excludeTags: ["vip", "also-missing"] };
      // Called one after the other: a call started early would reject before it is awaited.
      for (const call of [() => h.audience.countAudience({ filter }, as(t)), () => h.audience.listAudience({ filter }, as(t))]) {
        const info = await failure(call());
        expect(info.code).toBe(Code.InvalidArgument);
        expect(info.errorCode).toBe("unknown_tags");
        expect(info.message).toContain('"nope"');
        expect(info.message).toContain('"also-missing"');
        expect(info.fieldViolations.map((v) => [v.field, v.description])).toEqual([
          ["filter.include_tags[1]", 'no tag named "nope"'],
          ["filter.include_tags[2]", 'no tag named "Nope"'],
          ["filter.exclude_tags[1]", 'no tag named "also-missing"'],
        ]);
      }
    });
  });

  it("follows changes: status, tags, metadata, deleted tags", async () => {
    const t = tenant();
    const a = await subscriber(t, "a@example.com", ["news"], { plan: "pro" });
    const b = await subscriber(t, "b@example.com", ["news"], { plan: "pro" });
    const filter: Filter = { includeTags: ["news"], metadata: [equals("plan", "pro")] };
    expect(await audience(t, filter)).toEqual([a, b].sort());

    await h.subscribers.updateSubscriber({ id: a, status: SubscriberStatus.UNSUBSCRIBED }, as(t));
    expect(await audience(t, filter)).toEqual([b]);
    await h.subscribers.updateSubscriber({ id: a, status: SubscriberStatus.ACTIVE }, as(t));
    expect(await audience(t, filter)).toEqual([a, b].sort());

    await h.subscribers.removeTag({ subscriberId: b, tagName: "news" }, as(t));
    expect(await audience(t, filter)).toEqual([a]);
    await h.subscribers.addTags({ subscriberId: b, tags: ["NEWS"] }, as(t));
    await h.subscribers.updateSubscriber({ id: a, metadata: { plan: null } }, as(t));
    expect(await audience(t, filter)).toEqual([b]);
    expect(await audience(t, { metadata: [exists("plan", false)] })).toEqual([a]);

    await h.subscribers.deleteSubscriber({ id: b }, as(t));
    expect(await audience(t, {})).toEqual([a]);

    const tag = (await h.tags.listTags({}, as(t))).tags.find((x) => x.name === "news")!;
    await h.tags.deleteTag({ id: tag.id }, as(t));
    const info = await failure(h.audience.countAudience({ filter: { excludeTags: ["news"] } }, as(t)));
    expect(info.errorCode).toBe("unknown_tags");
    expect(info.fieldViolations).toEqual([expect.objectContaining({ field: "filter.exclude_tags[0]" })]);
  });

  it("keeps tenants apart: another tenant's subscribers never appear and its tag names are unknown", async () => {
    const owner = tenant("live");
    const mine = await subscriber(owner, "me@example.com", ["shared"], { plan: "pro" });
    const otherAccount = tenant("live");
    const otherMode = tenant("test", owner.tenant.accountId);
    const theirs: string[] = [];
    for (const other of [otherAccount, otherMode]) {
      theirs.push(await subscriber(other, "me@example.com", ["shared"], { plan: "pro" }));
      theirs.push(await subscriber(other, "them@example.com", ["shared", "private"], { plan: "pro" }));
    }
    expect(await audience(owner, {})).toEqual([mine]);
    expect(await audience(owner, { includeTags: ["shared"], metadata: [equals("plan", "pro")] })).toEqual([mine]);
    expect(await audience(owner, { excludeTags: ["shared"] })).toEqual([]);
    const info = await failure(h.audience.listAudience({ filter: { includeTags: ["private"] } }, as(owner)));
    expect(info.errorCode).toBe("unknown_tags");
    expect(info.fieldViolations).toEqual([expect.objectContaining({ field: "filter.include_tags[0]" })]);
    // Resuming from another tenant's id only bounds the ids; it never lets theirs in.
    for (const after of theirs) {
      const page = await h.audience.listAudience({ filter: {}, afterSubscriberId: after }, as(owner));
      expect(page.subscriberIds.filter((x) => theirs.includes(x))).toEqual([]);
    }
    for (const other of [otherAccount, otherMode]) {
      const ids = await audience(other, { includeTags: ["private"] });
      expect(ids).toHaveLength(1);
      expect(theirs).toContain(ids[0]);
    }
    expect(await failure(h.audience.countAudience({ filter: {} }, { headers: {} }))).toMatchObject({ code: Code.Unauthenticated });
  });

  it("pages by id ascending: every id once, resumable from any id, the last page says so", async () => {
    const t = tenant();
    const matching: string[] = [];
    const others: string[] = [];
    for (let i = 0; i < 7; i++) {
      matching.push(await subscriber(t, `m${i}@example.com`, ["list"]));
      others.push(await subscriber(t, `o${i}@example.com`, i % 2 ? ["list"] : ["other"], {}, i % 2 ? SubscriberStatus.UNSUBSCRIBED : SubscriberStatus.ACTIVE));
    }
    const gone = await subscriber(t, "gone@example.com", ["list"]);
    matching.push(await subscriber(t, "last@example.com", ["list"]));
    await h.subscribers.deleteSubscriber({ id: gone }, as(t));
    matching.sort();
    const filter: Filter = { includeTags: ["list"] };

    expect(await audience(t, filter, 2)).toEqual(matching);
    expect(await audience(t, filter, 3)).toEqual(matching);
    expect(await audience(t, filter, 8)).toEqual(matching);
    expect(await audience(t, filter, 5000)).toEqual(matching);
    const whole = await h.audience.listAudience({ filter }, as(t));
    expect(whole.subscriberIds).toEqual(matching);
    expect(whole.nextAfter).toBe("");
    // An exact multiple of the limit: the last full page already says it is the last.
    const exact = await h.audience.listAudience({ filter, afterSubscriberId: matching[3]!, limit: 4 }, as(t));
    expect(exact.subscriberIds).toEqual(matching.slice(4));
    expect(exact.nextAfter).toBe("");

    // Resuming from any id continues with the next greater one: a matching id,
    // one that does not match, and one of a subscriber deleted since.
    for (const after of [...matching, ...others, gone]) {
      const rest: string[] = [];
      let cursor = after;
      for (;;) {
        const page = await h.audience.listAudience({ filter, afterSubscriberId: cursor, limit: 2 }, as(t));
        rest.push(...page.subscriberIds);
        if (!page.nextAfter) break;
        cursor = page.nextAfter;
      }
      expect(rest).toEqual(matching.filter((x) => x > after));
    }
  });

  it("validates the request at the edge, naming each problem", async () => {
    const t = tenant();
    await subscriber(t, "x@example.com", ["known"]);
    const fields = async (request: Parameters<Harness["audience"]["listAudience"]>[0]) => {
      const info = await failure(h.audience.listAudience(request, as(t)));
      expect(info.code).toBe(Code.InvalidArgument);
      expect(info.errorCode).toBe("validation_failed");
      return info.fieldViolations.map((v) => v.field);
    };
    const many = (n: number) => Array.from({ length: n }, (_, i) => `tag${i}`);

    expect(await fields({})).toEqual(["filter"]);
    expect(await failure(h.audience.countAudience({}, as(t)))).toMatchObject({ code: Code.InvalidArgument, fieldViolations: [expect.objectContaining({ field: "filter" })] });
    expect(await fields({ filter: { includeTags: many(101) } })).toEqual(["filter.include_tags"]);
    expect(await fields({ filter: { excludeTags: many(101) } })).toEqual(["filter.exclude_tags"]);
    expect(await fields({ filter: { includeTags: ["ok", "bad/name", " "], excludeTags: ["x".repeat(101)] } })).toEqual([
      "filter.include_tags[1]",
      "filter.include_tags[2]",
      "filter.exclude_tags[0]",
    ]);
    expect(await fields({ filter: { match: 7 as Match } })).toEqual(["filter.match"]);
    expect(await fields({ filter: { metadata: Array.from({ length: 21 }, (_, i) => exists(`k${i}`, true)) } })).toEqual(["filter.metadata"]);
    expect(
      await fields({
        filter: {
          metadata: [
            equals("a.b", 1),
            equals("$where", 1),
            exists("-x", true),
            exists("k".repeat(41), true),
            { key: "none" },
            equals("nil", null),
            { key: "obj", condition: { case: "equals", value: create(ValueSchema, { kind: { case: "structValue", value: {} } }) } },
            { key: "list", condition: { case: "equals", value: create(ValueSchema, { kind: { case: "listValue", value: {} } }) } },
            equals("nan", Number.NaN),
            equals("long", "x".repeat(501)),
            oneOf("empty", []),
            oneOf("big", Array.from({ length: 101 }, (_, i) => i)),
            oneOf("mixed", ["ok", null, 2]),
            exists("twice", true),
            equals("twice", 1),
          ],
        },
      }),
    ).toEqual([
      "filter.metadata[0].key",
      "filter.metadata[1].key",
      "filter.metadata[2].key",
      "filter.metadata[3].key",
      "filter.metadata[4]",
      "filter.metadata[5].equals",
      "filter.metadata[6].equals",
      "filter.metadata[7].equals",
      "filter.metadata[8].equals",
      "filter.metadata[9].equals",
      "filter.metadata[10].in",
      "filter.metadata[11].in",
      "filter.metadata[12].in[1]",
      "filter.metadata[14].key",
    ]);
    expect(await fields({ filter: {}, limit: 5001 })).toEqual(["limit"]);
    expect(await fields({ filter: {}, limit: -1 })).toEqual(["limit"]);
    expect(await fields({ filter: {}, afterSubscriberId: "tag_01jabcdefghjkmnpqrstvwxyz0" })).toEqual(["after_subscriber_id"]);
    expect(await fields({ filter: {}, afterSubscriberId: "sub_nope" })).toEqual(["after_subscriber_id"]);
    // Shape before existence: a bad limit is reported even with an unknown tag.
    expect(await fields({ filter: { includeTags: ["unknown"] }, limit: 5001 })).toEqual(["limit"]);
    // At the bounds, accepted.
    await h.audience.listAudience({ filter: { excludeTags: Array.from({ length: 100 }, () => "known") }, limit: 5000 }, as(t));
    await h.audience.countAudience({ filter: { metadata: Array.from({ length: 20 }, (_, i) => oneOf(`k${i}`, Array.from({ length: 100 }, (_, j) => j))) } }, as(t));
  });

  it("GetRecipients: address, status, metadata and locale of the ids asked, in order; unknown, deleted and other tenants' ids left out", async () => {
    const owner = tenant("live");
    const a = await subscriber(owner, "a@example.com", [], { name: "Ann" });
    const b = await subscriber(owner, "b@example.com", [], {}, SubscriberStatus.UNSUBSCRIBED);
    const gone = await subscriber(owner, "gone@example.com", []);
    await h.subscribers.deleteSubscriber({ id: gone }, as(owner));
    const theirs = await subscriber(tenant("live"), "them@example.com", []);
    const unknown = newId("sub");
    const { recipients } = await h.audience.getRecipients({ subscriberIds: [b, unknown, a, theirs, gone] }, as(owner));
    expect(recipients.map((r) => [r.subscriberId, r.email, r.status])).toEqual([
      [b, "b@example.com", SubscriberStatus.UNSUBSCRIBED],
      [a, "a@example.com", SubscriberStatus.ACTIVE],
    ]);
    expect(recipients[1]!.metadata).toEqual({ name: "Ann" });
    // The language of their mail (delivery's <html lang>): empty when not set.
    expect(recipients.map((r) => r.locale)).toEqual(["", ""]);
    await h.subscribers.updateSubscriber({ id: a, locale: "de" }, as(owner));
    expect((await h.audience.getRecipients({ subscriberIds: [a] }, as(owner))).recipients[0]!.locale).toBe("de");
    const fields = async (ids: string[]) => (await failure(h.audience.getRecipients({ subscriberIds: ids }, as(owner)))).fieldViolations.map((v) => v.field);
    expect(await fields([])).toEqual(["subscriber_ids"]);
    expect(await fields(Array.from({ length: 1001 }, () => a))).toEqual(["subscriber_ids"]);
    expect(await fields([a, "tag_01jabcdefghjkmnpqrstvwxyz0"])).toEqual(["subscriber_ids[1]"]);
  });

  it("answers whether each recipient may be mailed, per category: by id and by address, a suppressed address included", async () => {
    const owner = tenant("live");
    const block = (m: { marketing: MailingBlock; transactional: MailingBlock } | undefined) => [m?.marketing, m?.transactional];
    const ids: Record<string, string> = {};
    for (const [name, status] of [
      ["active", SubscriberStatus.ACTIVE],
      ["unsubscribed", SubscriberStatus.UNSUBSCRIBED],
      ["bounced", SubscriberStatus.BOUNCED],
      ["complained", SubscriberStatus.COMPLAINED],
    ] as const) {
      ids[name] = await subscriber(owner, `${name}@example.com`, [], {}, status);
    }
    const expected = {
      active: [MailingBlock.UNSPECIFIED, MailingBlock.UNSPECIFIED],
      unsubscribed: [MailingBlock.UNSUBSCRIBED, MailingBlock.UNSPECIFIED],
      bounced: [MailingBlock.BOUNCED, MailingBlock.BOUNCED],
      complained: [MailingBlock.COMPLAINED, MailingBlock.COMPLAINED],
    };
    const { recipients } = await h.audience.getRecipients({ subscriberIds: Object.values(ids) }, as(owner));
    expect(Object.fromEntries(recipients.map((r) => [r.email.split("@")[0], block(r.mailability)]))).toEqual(expected);
    for (const [name, answer] of Object.entries(expected)) {
      const res = await h.audience.getRecipientByEmail({ email: `${name.toUpperCase()}@Example.com` }, as(owner));
      expect({ name, id: res.recipient?.subscriberId, answer: block(res.mailability), own: block(res.recipient?.mailability) }).toEqual({ name, id: ids[name], answer, own: answer });
    }

    // Erased: no subscriber any more, the address suppressed (marketing refused), in its tenant only.
    await h.subscribers.deleteSubscriber({ id: ids.active! }, as(owner));
    const erased = await h.audience.getRecipientByEmail({ email: "active@example.com" }, as(owner));
    expect(erased.recipient).toBeUndefined();
    expect(block(erased.mailability)).toEqual([MailingBlock.SUPPRESSED, MailingBlock.UNSPECIFIED]);
    expect(block((await h.audience.getRecipientByEmail({ email: "active@example.com" }, as(tenant("live")))).mailability)).toEqual([
      MailingBlock.UNSPECIFIED,
      MailingBlock.UNSPECIFIED,
    ]);
    // Nobody's address: may be mailed. A malformed one: INVALID_ARGUMENT.
    const stranger = await h.audience.getRecipientByEmail({ email: "stranger@example.com" }, as(owner));
    expect([stranger.recipient, block(stranger.mailability)]).toEqual([undefined, [MailingBlock.UNSPECIFIED, MailingBlock.UNSPECIFIED]]);
    expect((await failure(h.audience.getRecipientByEmail({ email: "not an address" }, as(owner)))).code).toBe(Code.InvalidArgument);
    // Many addresses in one call (a batch of emails): each answered as the single lookup answers it, in order;
    // a malformed one is nobody's and unblocked, and another tenant's subscribers are nobody's here.
    const asked = ["BOUNCED@example.com", "not an address", "active@example.com", "stranger@example.com", "unsubscribed@example.com", "complained@example.com", "bounced@example.com"];
    const { answers } = await h.audience.getRecipientsByEmail({ emails: asked }, as(owner));
    expect(answers.map((a) => [a.recipient?.subscriberId, block(a.mailability)])).toEqual([
      [ids.bounced, expected.bounced],
      [undefined, [MailingBlock.UNSPECIFIED, MailingBlock.UNSPECIFIED]],
      [undefined, [MailingBlock.SUPPRESSED, MailingBlock.UNSPECIFIED]],
      [undefined, [MailingBlock.UNSPECIFIED, MailingBlock.UNSPECIFIED]],
      [ids.unsubscribed, expected.unsubscribed],
      [ids.complained, expected.complained],
      [ids.bounced, expected.bounced],
    ]);
    const other = await h.audience.getRecipientsByEmail({ emails: ["bounced@example.com"] }, as(tenant("test")));
    expect(other.answers.map((a) => [a.recipient, block(a.mailability)])).toEqual([[undefined, [MailingBlock.UNSPECIFIED, MailingBlock.UNSPECIFIED]]]);
    expect((await failure(h.audience.getRecipientsByEmail({ emails: Array.from({ length: 1001 }, () => "a@example.com") }, as(owner)))).code).toBe(Code.InvalidArgument);
    // Opted in again: the suppression is lifted.
    await h.subscribers.createSubscriber({ email: "active@example.com", resubscribe: true, resubscribeReason: "double opt-in" }, as(owner));
    expect(block((await h.audience.getRecipientByEmail({ email: "active@example.com" }, as(owner))).mailability)).toEqual([
      MailingBlock.UNSPECIFIED,
      MailingBlock.UNSPECIFIED,
    ]);
  });
});

describe("an audience's count by tags on the embedded store", () => {
  let h: Harness;
  beforeAll(async () => {
    // No document cache: every subscriber read comes from its line in the datafile, and is counted.
    h = await startHarness("embedded", { cacheBytes: 0 });
  });
  afterAll(async () => {
    await h?.close();
  });

  it("reads no active subscriber to count those holding any of the tags, only the deleted ones", async () => {
    const t = tenant("live");
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) {
      const { subscriber } = await h.subscribers.createSubscriber({ email: `s${i}@example.com`, tags: i % 2 === 0 ? ["news"] : ["news", "vip"], status: SubscriberStatus.ACTIVE }, as(t));
      ids.push(subscriber!.id);
    }
    await h.subscribers.deleteSubscriber({ id: ids[0]! }, as(t));
    await h.subscribers.deleteSubscriber({ id: ids[1]! }, as(t));
    await h.tags.createTag({ name: "nobody" }, as(t));
    const reads = () => (h.store.collection("subscribers") as unknown as { reads: number }).reads;
    const count = async (filter: Filter) => Number((await h.audience.countAudience({ filter }, as(t))).count);
    // The first use of an index builds it, reading every document once.
    expect(await count({ includeTags: ["news"] })).toBe(38);
    const before = reads();
    expect(await count({ includeTags: ["news"] })).toBe(38);
    expect(await count({ includeTags: ["news", "vip"], match: Match.ANY })).toBe(38);
    expect(await count({ includeTags: ["vip"] })).toBe(19);
    // At most the two tombstones (deleted, still `active`, until the relay removes them), once per count; none of the 38 active subscribers.
    expect(reads() - before).toBeLessThanOrEqual(6);
    // A filter the index cannot answer alone reads its candidates.
    const then = reads();
    expect(await count({ includeTags: ["vip"], excludeTags: ["nobody"] })).toBe(19);
    expect(reads() - then).toBeGreaterThanOrEqual(19);
  });
});
