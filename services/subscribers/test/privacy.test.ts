import { Code } from "@connectrpc/connect";
import { SubscriberStatus } from "@emailsvc/proto";
import { readError } from "@emailsvc/errors";
import { createHmac } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parseKeyRing } from "@emailsvc/tokens";
import { suppressionHashes } from "../src/domain/suppression.js";
import { as, startHarness, SUPPRESSION_KEYS, tenant, waitFor, type Harness, type StoreKind } from "./harness.js";

// What GDPR and DSG ask of the subscribers service: an audit trail that says
// how, when and from where every subscription change came, the subscriber's
// language, and (below, as they come) suppression, export and erasure.

const fail = (promise: Promise<unknown>) => promise.then(() => { throw new Error("expected the call to fail"); }, readError);

describe.each<StoreKind>(["embedded", "mongodb"])("privacy of the subscribers service on %s storage", (kind) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(kind);
  });
  afterAll(async () => {
    await h?.close();
  });

  it("audits every subscription change with its source, IP address and user agent", async () => {
    const t = tenant();
    const api = { source: "api", ip: "203.0.113.7", userAgent: "curl/8.5.0" };
    const portal = { source: "portal", ip: "2001:db8::42", userAgent: "Mozilla/5.0 (X11; Linux x86_64)" };
    const oneClick = { source: "one_click", ip: "198.51.100.9", userAgent: "" };
    const { subscriber } = await h.subscribers.createSubscriber({ email: "how@example.com", tags: ["t1"], audit: api }, as(t));
    const id = subscriber!.id;
    await h.subscribers.addTags({ subscriberId: id, tags: ["t2"], audit: portal }, as(t));
    await h.subscribers.removeTag({ subscriberId: id, tagName: "t1", audit: portal }, as(t));
    await h.subscribers.updateSubscriber({ id, status: SubscriberStatus.UNSUBSCRIBED, audit: oneClick }, as(t));
    await h.subscribers.updateSubscriber({ id, locale: "de", audit: { source: "import", ip: "", userAgent: "" } }, as(t));
    const t2 = (await h.tags.listTags({}, as(t))).tags.find((tag) => tag.name === "t2")!;
    await h.tags.deleteTag({ id: t2.id, audit: api }, as(t));
    // Without an AuditContext the change is still audited, its source empty.
    await h.subscribers.addTags({ subscriberId: id, tags: ["t3"] }, as(t));

    const trail = (await h.subscribers.listSubscriberEvents({ subscriberId: id }, as(t))).events;
    expect(trail.map((e) => [e.type, e.source, e.ip, e.userAgent])).toEqual([
      ["subscriber.created", "api", "203.0.113.7", "curl/8.5.0"],
      ["subscriber.tag_added", "portal", "2001:db8::42", "Mozilla/5.0 (X11; Linux x86_64)"],
      ["subscriber.tag_removed", "portal", "2001:db8::42", "Mozilla/5.0 (X11; Linux x86_64)"],
      ["subscriber.status_changed", "one_click", "198.51.100.9", ""],
      ["subscriber.updated", "import", "", ""],
      ["subscriber.tag_removed", "api", "203.0.113.7", "curl/8.5.0"],
      ["subscriber.tag_added", "", "", ""],
    ]);
    expect(trail[4]!.data).toEqual({ fields: ["locale"] });
    expect(trail[5]!.data).toMatchObject({ tag: "t2", reason: "tag_deleted" });
    // The trail's data holds no address.
    expect(JSON.stringify(trail.map((e) => e.data))).not.toContain("how@example.com");
  });

  it("refuses an AuditContext it cannot keep, and changes nothing", async () => {
    const t = tenant();
    const bad = [
      [{ source: "web", ip: "", userAgent: "" }, "audit.source"],
      [{ source: "api", ip: "not-an-ip", userAgent: "" }, "audit.ip"],
      [{ source: "api", ip: "", userAgent: "x".repeat(513) }, "audit.user_agent"],
      [{ source: "api", ip: "", userAgent: "a\nb" }, "audit.user_agent"],
    ] as const;
    for (const [audit, field] of bad) {
      const info = await fail(h.subscribers.createSubscriber({ email: "bad-audit@example.com", audit }, as(t)));
      expect(info.code).toBe(Code.InvalidArgument);
      expect(info.fieldViolations.map((v) => v.field)).toEqual([field]);
    }
    expect((await h.subscribers.listSubscribers({}, as(t))).subscribers).toEqual([]);
  });

  it("keeps a locale (en, de, fr, it, or none), set on create and changed or unset on update", async () => {
    const t = tenant();
    const { subscriber } = await h.subscribers.createSubscriber({ email: "lang@example.com", locale: "fr" }, as(t));
    expect(subscriber!.locale).toBe("fr");
    expect((await h.subscribers.createSubscriber({ email: "nolang@example.com" }, as(t))).subscriber!.locale).toBe("");
    expect((await h.subscribers.updateSubscriber({ id: subscriber!.id, locale: "it" }, as(t))).subscriber!.locale).toBe("it");
    // Absent: unchanged.
    expect((await h.subscribers.updateSubscriber({ id: subscriber!.id, metadata: { a: 1 } }, as(t))).subscriber!.locale).toBe("it");
    expect((await h.subscribers.updateSubscriber({ id: subscriber!.id, locale: "" }, as(t))).subscriber!.locale).toBe("");
    for (const locale of ["es", "EN", "de-CH"]) {
      const info = await fail(h.subscribers.createSubscriber({ email: "badlang@example.com", locale }, as(t)));
      expect(info.code).toBe(Code.InvalidArgument);
      expect(info.fieldViolations.map((v) => v.field)).toEqual(["locale"]);
      expect((await fail(h.subscribers.updateSubscriber({ id: subscriber!.id, locale }, as(t)))).code).toBe(Code.InvalidArgument);
    }
    expect((await h.subscribers.getSubscriber({ id: subscriber!.id }, as(t))).subscriber!.locale).toBe("");
  });

  it("suppresses an erased address: a create is 409 subscriber_suppressed unless resubscribe with a reason, which lifts it and is audited", async () => {
    const t = tenant();
    const { subscriber } = await h.subscribers.createSubscriber({ email: "Erased.Person@Example.com", metadata: { crm: "c-1" } }, as(t));
    await h.subscribers.deleteSubscriber({ id: subscriber!.id, audit: { source: "api", ip: "203.0.113.7", userAgent: "ua" } }, as(t));
    await waitFor(async () => ((await h.store.collection("subscribers").count({ _id: subscriber!.id })) === 0 ? true : undefined), "tombstone removal");

    // Only a keyed hash of tenant and address is kept: not the address, not the id.
    const markers = await h.store.collection("suppressions").find({ tenant: `${t.tenant.accountId}:test` });
    const key = SUPPRESSION_KEYS.current;
    const expected = createHmac("sha256", key.secret).update(`${t.tenant.accountId}:test\nerased.person@example.com`).digest("base64url");
    expect(markers).toEqual([{ _id: expected, tenant: `${t.tenant.accountId}:test`, key_id: key.id, created_at: expect.any(Number), reason: "erased", source: "erasure" }]);
    expect(JSON.stringify(markers).toLowerCase()).not.toMatch(/erased\.person|sub_/);

    // Any case of the address, any way of creating it.
    for (const email of ["erased.person@example.com", "ERASED.PERSON@EXAMPLE.COM"]) {
      const info = await fail(h.subscribers.createSubscriber({ email, tags: ["fresh"] }, as(t)));
      expect(info.code).toBe(Code.AlreadyExists);
      expect(info.errorCode).toBe("subscriber_suppressed");
      expect(info.fieldViolations.map((v) => v.field)).toEqual(["email"]);
    }
    // Nothing was made for the refused creates.
    expect((await h.tags.listTags({}, as(t))).tags).toEqual([]);
    // Changing another subscriber's address to it is refused too.
    const other = (await h.subscribers.createSubscriber({ email: "other@example.com" }, as(t))).subscriber!;
    expect((await fail(h.subscribers.updateSubscriber({ id: other.id, email: "erased.person@example.com" }, as(t)))).errorCode).toBe("subscriber_suppressed");
    // Another tenant (the account's live mode too) knows nothing of it.
    const live = tenant("live", t.tenant.accountId);
    expect((await h.subscribers.createSubscriber({ email: "erased.person@example.com" }, as(live))).subscriber!.email).toBe("erased.person@example.com");

    // resubscribe needs a reason, bounded; a reason needs resubscribe.
    for (const [req, field] of [
      [{ resubscribe: true, resubscribeReason: "" }, "resubscribe_reason"],
      [{ resubscribe: true, resubscribeReason: "   " }, "resubscribe_reason"],
      // Nothing that shows (issue 16, defect 11a): zero width space, BOM, word joiner, a tag character.
      [{ resubscribe: true, resubscribeReason: "\u200b" }, "resubscribe_reason"],
      [{ resubscribe: true, resubscribeReason: "\ufeff\u2060\u200b" }, "resubscribe_reason"],
      [{ resubscribe: true, resubscribeReason: "\u{E0020}\u{E0021}" }, "resubscribe_reason"],
      // Blank-looking symbols that are neither space nor format (issue 16 review): Braille pattern blank,
      // musical null notehead, Khitan small script filler, halfwidth Hangul filler.
      [{ resubscribe: true, resubscribeReason: "\u2800" }, "resubscribe_reason"],
      [{ resubscribe: true, resubscribeReason: "\u{1D159}\u2800" }, "resubscribe_reason"],
      [{ resubscribe: true, resubscribeReason: "\u{16FE4}" }, "resubscribe_reason"],
      [{ resubscribe: true, resubscribeReason: "\uffa0\u3164" }, "resubscribe_reason"],
      [{ resubscribe: true, resubscribeReason: "x".repeat(501) }, "resubscribe_reason"],
      [{ resubscribe: false, resubscribeReason: "why not" }, "resubscribe_reason"],
    ] as const) {
      const info = await fail(h.subscribers.createSubscriber({ email: "erased.person@example.com", ...req }, as(t)));
      expect(info.code).toBe(Code.InvalidArgument);
      expect(info.fieldViolations.map((v) => v.field)).toEqual([field]);
    }

    const back = await h.subscribers.createSubscriber(
      { email: "erased.person@example.com", resubscribe: true, resubscribeReason: "double opt-in confirmed on 2026-11-20", audit: { source: "import", ip: "", userAgent: "" } },
      as(t),
    );
    expect(back.subscriber!.id).not.toBe(subscriber!.id);
    expect(await h.store.collection("suppressions").count({ _id: expected })).toBe(0);
    const trail = (await h.subscribers.listSubscriberEvents({ subscriberId: back.subscriber!.id }, as(t))).events;
    expect(trail[0]!.type).toBe("subscriber.created");
    expect(trail[0]!.source).toBe("import");
    expect(trail[0]!.data).toMatchObject({ resubscribe: true, resubscribe_reason: "double opt-in confirmed on 2026-11-20" });
    // Not suppressed any more: erased again, suppressed again.
    await h.subscribers.deleteSubscriber({ id: back.subscriber!.id }, as(t));
    expect((await fail(h.subscribers.createSubscriber({ email: "erased.person@example.com" }, as(t)))).errorCode).toBe("subscriber_suppressed");
  });

  it("exports the subscriber's part: profile, tags with when and how joined, the whole audit trail, consent records", async () => {
    const t = tenant();
    const api = { source: "api", ip: "203.0.113.7", userAgent: "curl/8.5.0" };
    const portal = { source: "portal", ip: "2001:db8::42", userAgent: "Mozilla/5.0" };
    const { subscriber } = await h.subscribers.createSubscriber(
      { email: "Export.Me@example.com", tags: ["news"], metadata: { plan: "pro", seats: 3 }, locale: "de", audit: api },
      as(t),
    );
    const id = subscriber!.id;
    await h.subscribers.addTags({ subscriberId: id, tags: ["vip"], audit: portal }, as(t));
    await h.subscribers.updateSubscriber({ id, status: SubscriberStatus.UNSUBSCRIBED, audit: { source: "one_click", ip: "198.51.100.9", userAgent: "" } }, as(t));
    await h.subscribers.updateSubscriber({ id, status: SubscriberStatus.ACTIVE, audit: portal }, as(t));
    // Someone else in the tenant, whose data must not appear.
    await h.subscribers.createSubscriber({ email: "someone.else@example.com", tags: ["news"], metadata: { plan: "other-plan" } }, as(t));

    const res = await h.subscribers.exportSubscriberData({ subscriberId: id, audit: portal }, as(t));
    const part = JSON.parse(res.json);
    expect(Object.keys(part)).toEqual(["profile", "tags", "audit_trail", "consent"]);
    expect(part.profile).toEqual({
      id,
      email: "Export.Me@example.com",
      status: "active",
      locale: "de",
      metadata: { plan: "pro", seats: 3 },
      created_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
      updated_at: expect.stringMatching(/Z$/),
    });
    expect(part.tags).toEqual([
      { id: expect.stringMatching(/^tag_/), name: "news", joined_at: part.profile.created_at, joined_via: "api" },
      { id: expect.stringMatching(/^tag_/), name: "vip", joined_at: expect.stringMatching(/Z$/), joined_via: "portal" },
    ]);
    expect(part.audit_trail.map((e: { type: string; source: string; ip: string; user_agent: string | null }) => [e.type, e.source, e.ip, e.user_agent])).toEqual([
      ["subscriber.created", "api", "203.0.113.7", "curl/8.5.0"],
      ["subscriber.tag_added", "portal", "2001:db8::42", "Mozilla/5.0"],
      ["subscriber.status_changed", "one_click", "198.51.100.9", null],
      ["subscriber.status_changed", "portal", "2001:db8::42", "Mozilla/5.0"],
    ]);
    expect(part.audit_trail[0]).toMatchObject({ id: expect.stringMatching(/^evt_/), actor: "api_key:key_test", occurred_at: expect.stringMatching(/Z$/) });
    expect(part.consent.map((c: { action: string; scope: string; tag: string | null; source: string }) => [c.action, c.scope, c.tag, c.source])).toEqual([
      ["opt_in", "all", null, "api"],
      ["opt_in", "tag", "vip", "portal"],
      ["opt_out", "all", null, "one_click"],
      ["opt_in", "all", null, "portal"],
    ]);
    expect(part.consent[2]).toMatchObject({ ip: "198.51.100.9", user_agent: null, reason: null, event_id: part.audit_trail[2].id });
    expect(res.json).not.toContain("someone.else");
    expect(res.json).not.toContain("other-plan");

    // Unknown, another tenant's, or erased: NOT_FOUND.
    expect((await fail(h.subscribers.exportSubscriberData({ subscriberId: "sub_00000000000000000000000000" }, as(t)))).code).toBe(Code.NotFound);
    expect((await fail(h.subscribers.exportSubscriberData({ subscriberId: id }, as(tenant())))).code).toBe(Code.NotFound);
    await h.subscribers.deleteSubscriber({ id }, as(t));
    expect((await fail(h.subscribers.exportSubscriberData({ subscriberId: id }, as(t)))).code).toBe(Code.NotFound);
  });

  it("logs every export and erasure request (who, when, how, outcome) without the address, the id or the IP address", async () => {
    const t = tenant();
    const tenantKey = `${t.tenant.accountId}:test`;
    const portal = { source: "portal", ip: "2001:db8::99", userAgent: "Mozilla/5.0 Secret-UA" };
    const { subscriber } = await h.subscribers.createSubscriber({ email: "logged@example.com" }, as(t));
    const id = subscriber!.id;
    await h.subscribers.exportSubscriberData({ subscriberId: id, audit: { source: "api", ip: "203.0.113.1", userAgent: "x" } }, as(t));
    await h.subscribers.exportSubscriberData({ subscriberId: id, audit: portal }, as({ ...t, actor: "portal" }));
    await fail(h.subscribers.exportSubscriberData({ subscriberId: "sub_00000000000000000000000000" }, as(t)));
    await h.subscribers.deleteSubscriber({ id, audit: portal }, as({ ...t, actor: "portal" }));
    await fail(h.subscribers.deleteSubscriber({ id, audit: { source: "api", ip: "", userAgent: "" } }, as(t)));

    const log = await waitFor(async () => {
      const docs = await h.store.collection("privacy_requests").find({ tenant: tenantKey }, { sort: { _id: 1 } });
      return docs.length === 5 && docs[3]!.outcome === "erased" ? docs : undefined;
    }, "the erasure marked done");
    expect(log.map((r) => [r.kind, r.requested_by, r.source, r.outcome, r.completed_at !== null])).toEqual([
      ["export", "api_key:key_test", "api", "exported", true],
      ["export", "subscriber", "portal", "exported", true],
      ["export", "api_key:key_test", "", "not_found", true],
      ["erasure", "subscriber", "portal", "erased", true],
      ["erasure", "api_key:key_test", "api", "not_found", true],
    ]);
    for (const r of log) expect(Object.keys(r).sort()).toEqual(["_id", "completed_at", "kind", "outcome", "requested_at", "requested_by", "source", "tenant"]);
    const text = JSON.stringify(log);
    for (const secret of ["logged@example.com", id, "2001:db8::99", "203.0.113.1", "Secret-UA"]) expect(text).not.toContain(secret);
  });

  it("erasure leaves nothing of the subscriber in its database: not the address, the id, a metadata value, an IP address or a user agent", async () => {
    const t = tenant();
    const email = `Erase.Everything.${Date.now().toString(36)}@Example.com`;
    const metadata = { crm_id: "crm-7f3a9", city: "Winterthur-Seen", vip_score: 987654.321 };
    const ip = "198.51.100.213";
    const ua = "EraseTestAgent/4.2 (unique-ua-4f1c)";
    const audit = { source: "api", ip, userAgent: ua };
    const { subscriber } = await h.subscribers.createSubscriber({ email, tags: ["erase-tag"], metadata, locale: "it", audit }, as(t));
    const id = subscriber!.id;
    // Earlier values too: the embedded store appends every state of a document.
    await h.subscribers.updateSubscriber({ id, metadata: { city: "Winterthur-Seen" }, status: SubscriberStatus.UNSUBSCRIBED, audit }, as(t));
    await h.subscribers.addTags({ subscriberId: id, tags: ["erase-tag-2"], audit }, as(t));
    await h.subscribers.removeTag({ subscriberId: id, tagName: "erase-tag", audit }, as(t));
    await h.subscribers.exportSubscriberData({ subscriberId: id, audit }, as(t));
    // Someone else stays, whole.
    const other = (await h.subscribers.createSubscriber({ email: "stays@example.com", metadata: { keep: "kept-value" } }, as(t))).subscriber!;

    await h.subscribers.deleteSubscriber({ id, audit }, as(t));
    const secrets = [email, email.toLowerCase(), id, ...Object.values(metadata).map(String), ip, ua];
    const found = (text: string) => secrets.filter((secret) => text.includes(secret));
    const remains = await waitFor(async () => {
      const text = await everything(h);
      return found(text).length === 0 ? text : undefined;
    }, "nothing of the subscriber left");
    expect(found(remains)).toEqual([]);
    expect(remains).toContain("kept-value");
    expect((await h.subscribers.getSubscriber({ id: other.id }, as(t))).subscriber!.metadata).toEqual({ keep: "kept-value" });
  });
});

/** Every byte the service's database holds: the embedded store's datafiles, or every document of its collections on MongoDB. */
async function everything(h: Harness): Promise<string> {
  if (h.dataDir) {
    const files = readdirSync(h.dataDir).filter((name) => name !== ".lock");
    return files.map((name) => readFileSync(join(h.dataDir!, name), "latin1")).join("\n");
  }
  const names = ["subscribers", "tags", "subscriber_events", "suppressions", "privacy_requests"];
  const docs = await Promise.all(names.map((name) => h.store.collection(name).find({})));
  return JSON.stringify(docs);
}

describe("suppression hashes", () => {
  it("are one per key of SUPPRESSION_KEYS (the first writes, all find: a key can be rotated), differ per tenant, and hide the address", () => {
    const ring = parseKeyRing(`new:${Buffer.alloc(32, 1).toString("base64")},old:${Buffer.alloc(32, 2).toString("base64")}`);
    const hashes = suppressionHashes(ring, "acc_1:live", "ada@example.com");
    expect(hashes.map((h) => h.keyId)).toEqual(["new", "old"]);
    expect(hashes[1]!.hash).toBe(createHmac("sha256", Buffer.alloc(32, 2)).update("acc_1:live\nada@example.com").digest("base64url"));
    expect(suppressionHashes(ring, "acc_1:test", "ada@example.com")[0]!.hash).not.toBe(hashes[0]!.hash);
    expect(hashes[0]!.hash).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });
});
