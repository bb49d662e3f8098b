import { KeyRing, signToken, type TokenSubject } from "@emailsvc/tokens";
import { startTestPlatform, type TestPlatform } from "./support/platform-client";

// One-click unsubscribe (RFC 8058) through the real platform: the link of a
// marketing mail's List-Unsubscribe header. A GET shows a page and changes
// nothing (mail scanners follow links); a POST unsubscribes at once, as
// form-encoded or multipart/form-data. The pages speak the subscriber's
// language, name the sender and say what happens; a broken link is a page for
// a browser and problem+json for a client that asks for JSON (issue 16,
// defects 12 and 13).

let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform("unsubscribe");
});
afterAll(() => t?.close());

const ONE_CLICK = "List-Unsubscribe=One-Click";

async function subscriber(email: string, locale?: string): Promise<string> {
  const res = await t.call("POST", "/api/v1/subscribers", { body: { email, ...(locale ? { locale } : {}) } });
  expect(res.status).toBe(201);
  return res.body.id as string;
}

function linkFor(subject: Partial<TokenSubject>, ring: KeyRing = t.platform.tokenKeys, ttlSeconds = 3600): string {
  const token = signToken(ring, { purpose: "unsubscribe", accountId: t.accountId, mode: "test", ...subject }, { ttlSeconds });
  return `/unsubscribe?token=${token}`;
}

const oneClick = (path: string, body = ONE_CLICK, type = "application/x-www-form-urlencoded") =>
  t.call("POST", path, { key: null, raw: body, headers: { "content-type": type } });

const statusOf = async (id: string) => (await t.call("GET", `/api/v1/subscribers/${id}`)).body.status as string;

describe("one-click unsubscribe", () => {
  it("shows a confirmation page on GET and changes nothing", async () => {
    const id = await subscriber("scanner@example.com");
    const res = await t.call("GET", linkFor({ subscriberId: id }), { key: null });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    expect(res.text).toContain('<form method="post">');
    expect(res.text).toContain('name="List-Unsubscribe" value="One-Click"');
    expect(res.text).not.toContain("scanner@example.com");
    expect(res.headers.get("content-security-policy")).toContain("default-src 'none'");
    expect(res.headers.get("referrer-policy")).toBe("no-referrer");
    expect(await statusOf(id)).toBe("active");
  });

  it("unsubscribes on the RFC 8058 POST, once, with the actor, source one_click, IP and user agent in the audit trail", async () => {
    const id = await subscriber("oneclick@example.com");
    const link = linkFor({ subscriberId: id });
    const res = await oneClick(link);
    expect(res.status).toBe(200);
    expect(res.text).toContain("You are unsubscribed");
    expect(await statusOf(id)).toBe("unsubscribed");
    expect(res.text).not.toContain("unsubscribed already");
    const again = await oneClick(link);
    expect(again.status).toBe(200);
    // Says what happened: nothing, this time.
    expect(again.text).toContain("This had been done before: you were unsubscribed already.");
    const events = (await t.call("GET", `/api/v1/subscribers/${id}/events`)).body.items as Array<{ type: string; actor: string }>;
    expect(events.filter((e) => e.type === "subscriber.status_changed")).toEqual([
      expect.objectContaining({ type: "subscriber.status_changed", actor: "one_click", source: "one_click", ip: "127.0.0.1", user_agent: "node" }),
    ]);
  });

  it("leaves a bounced subscriber bounced", async () => {
    const id = await subscriber("bounced@example.com");
    await t.call("PATCH", `/api/v1/subscribers/${id}`, { body: { status: "bounced" } });
    expect((await oneClick(linkFor({ subscriberId: id }))).status).toBe(200);
    expect(await statusOf(id)).toBe("bounced");
  });

  it("treats an erased subscriber as done, without saying who it was", async () => {
    const id = await subscriber("gone@example.com");
    expect((await t.call("DELETE", `/api/v1/subscribers/${id}`)).status).toBe(204);
    const res = await oneClick(linkFor({ subscriberId: id }));
    expect(res.status).toBe(200);
  });

  it("refuses tampered, expired, foreign-key and other-purpose tokens with a page, changing nothing", async () => {
    const id = await subscriber("tamper@example.com");
    const good = linkFor({ subscriberId: id });
    const [head, payload, signature] = good.split("token=")[1]!.split(".");
    const otherId = await subscriber("victim@example.com");
    const forged = JSON.parse(Buffer.from(payload!, "base64url").toString()) as Record<string, unknown>;
    forged.sub = otherId;
    const tampered = `/unsubscribe?token=${head}.${Buffer.from(JSON.stringify(forged)).toString("base64url")}.${signature}`;
    const foreignRing = new KeyRing([{ id: t.platform.tokenKeys.current.id, secret: Buffer.alloc(32, 9) }]);
    const expired = `/unsubscribe?token=${signToken(
      t.platform.tokenKeys,
      { purpose: "unsubscribe", accountId: t.accountId, mode: "test", subscriberId: id },
      { ttlSeconds: 60, now: Date.now() - 120_000 },
    )}`;
    const otherPurpose = `/unsubscribe?token=${signToken(
      t.platform.tokenKeys,
      { purpose: "preferences", accountId: t.accountId, mode: "test", subscriberId: id },
      { ttlSeconds: 60 },
    )}`;
    for (const link of [tampered, linkFor({ subscriberId: id }, foreignRing), expired, otherPurpose]) {
      const page = await t.call("GET", link, { key: null });
      expect(page.status).toBe(403);
      expect(page.headers.get("content-type")).toMatch(/^text\/html/);
      expect(page.text).toContain("This link is not valid");
      expect((await oneClick(link)).status).toBe(403);
      // A client that asks for JSON gets the problem.
      const asJson = await t.call("GET", link, { key: null, headers: { accept: "application/json" } });
      expect({ status: asJson.status, type: asJson.headers.get("content-type"), code: asJson.body.code }).toEqual({
        status: 403,
        type: "application/problem+json",
        code: "invalid_link",
      });
    }
    expect(await statusOf(id)).toBe("active");
    expect(await statusOf(otherId)).toBe("active");
  });

  it("cannot reach another tenant: the token's tenant is the only one it acts in", async () => {
    const id = await subscriber("tenant@example.com");
    const otherAccount = (await t.call("POST", "/admin/v1/accounts", { admin: true, body: { name: "other" } })).body.id as string;
    const res = await oneClick(
      `/unsubscribe?token=${signToken(t.platform.tokenKeys, { purpose: "unsubscribe", accountId: otherAccount, mode: "test", subscriberId: id }, { ttlSeconds: 60 })}`,
    );
    expect(res.status).toBe(200);
    expect(await statusOf(id)).toBe("active");
  });

  it("answers 400 or 415 for a body that is not the one-click form, changing nothing", async () => {
    const id = await subscriber("body@example.com");
    const link = linkFor({ subscriberId: id });
    const wrongBody = await oneClick(link, "List-Unsubscribe=Yes");
    expect(wrongBody.status).toBe(400);
    // The link is fine: the page does not say otherwise.
    expect(wrongBody.text).toContain("nothing was changed");
    expect(wrongBody.text).not.toContain("This link is not valid");
    expect((await oneClick(link, `${ONE_CLICK}&x=1`)).status).toBe(400);
    expect((await oneClick(link, "")).status).toBe(400);
    expect((await oneClick(link, JSON.stringify({ "List-Unsubscribe": "One-Click" }), "application/json")).status).toBe(415);
    expect(await statusOf(id)).toBe("active");
  });

  it("shows a broken link (no token, a cut one) as a page in the browser's language, and as problem+json to a client that asks for JSON", async () => {
    for (const path of ["/unsubscribe", "/unsubscribe?token=eyJhbGciOiJIUzI1NiJ9.eyJz", "/unsubscribe?token="]) {
      const page = await t.call("GET", path, { key: null, headers: { accept: "text/html,application/xhtml+xml,*/*;q=0.8", "accept-language": "de-CH,de;q=0.9" } });
      expect({ path, status: page.status, type: page.headers.get("content-type") }).toEqual({ path, status: 400, type: "text/html; charset=utf-8" });
      expect(page.text).toContain('<html lang="de">');
      expect(page.text).toContain("Dieser Link ist ungültig");
      expect(page.text).not.toMatch(/"code"|validation_failed/);
      expect(page.headers.get("content-security-policy")).toContain("default-src 'none'");
      const problem = await t.call("GET", path, { key: null, headers: { accept: "application/problem+json" } });
      expect({ status: problem.status, code: problem.body.code }).toEqual({ status: 400, code: "validation_failed" });
    }
  });
});

describe("one-click as multipart/form-data (RFC 8058)", () => {
  const boundary = "----one-click-7MA4YWxkTrZu0gW";
  const multipart = (field: string, value: string, extra = "") =>
    `--${boundary}\r\nContent-Disposition: form-data; name="${field}"\r\n${extra}\r\n${value}\r\n--${boundary}--\r\n`;
  const TYPE = `multipart/form-data; boundary=${boundary}`;

  it("unsubscribes on List-Unsubscribe=One-Click sent as multipart/form-data", async () => {
    const id = await subscriber("multipart@example.com");
    const res = await oneClick(linkFor({ subscriberId: id }), multipart("List-Unsubscribe", "One-Click"), TYPE);
    expect(res.status).toBe(200);
    expect(res.text).toContain("You are unsubscribed");
    expect(await statusOf(id)).toBe("unsubscribed");
    // A part with its own content type, as some senders write it, is the same field.
    const other = await subscriber("multipart-typed@example.com");
    expect((await oneClick(linkFor({ subscriberId: other }), multipart("List-Unsubscribe", "One-Click", "Content-Type: text/plain; charset=utf-8\r\n"), TYPE)).status).toBe(200);
    expect(await statusOf(other)).toBe("unsubscribed");
  });

  it("refuses another field, another value, a broken or oversized body, changing nothing", async () => {
    const id = await subscriber("multipart-bad@example.com");
    const link = linkFor({ subscriberId: id });
    expect((await oneClick(link, multipart("List-Unsubscribe", "Yes"), TYPE)).status).toBe(400);
    expect((await oneClick(link, multipart("Unsubscribe", "One-Click"), TYPE)).status).toBe(400);
    expect((await oneClick(link, "not multipart at all", TYPE)).status).toBe(400);
    expect((await oneClick(link, multipart("List-Unsubscribe", "One-Click"), "multipart/form-data")).status).toBe(400);
    // A file part is no form value.
    expect((await oneClick(link, multipart("List-Unsubscribe", "One-Click").replace('name="List-Unsubscribe"', 'name="List-Unsubscribe"; filename="x.txt"'), TYPE)).status).toBe(400);
    const big = await oneClick(link, multipart("List-Unsubscribe", "One-Click", `X-Padding: ${"p".repeat(5000)}\r\n`), TYPE);
    expect(big.status).toBe(413);
    expect(await statusOf(id)).toBe("active");
  });
});

describe("one-click pages: the subscriber's language, the sender, what happens", () => {
  it("speak the subscriber's stored language, else the browser's, on the page and the answer", async () => {
    const de = await subscriber("sprache@example.com", "de");
    const page = await t.call("GET", linkFor({ subscriberId: de }), { key: null, headers: { "accept-language": "fr" } });
    expect(page.text).toContain('<html lang="de">');
    expect(page.text).toContain("Alle Marketing-E-Mails abbestellen");
    const done = await oneClick(linkFor({ subscriberId: de }));
    expect(done.text).toContain("Sie sind abgemeldet");
    // No stored language: the browser's (French first, by q-value).
    const fr = await subscriber("langue@example.com");
    const french = await t.call("GET", linkFor({ subscriberId: fr }), { key: null, headers: { "accept-language": "en;q=0.5, fr-CH, it;q=0.8" } });
    expect(french.text).toContain('<html lang="fr">');
    expect(french.text).toContain("Me désabonner de tous les e-mails marketing");
    const italian = await t.call("GET", linkFor({ subscriberId: fr }), { key: null, headers: { "accept-language": "it" } });
    expect(italian.text).toContain('<html lang="it">');
  });

  it("name the sender (its sender_name, else the account's name) and say exactly what happens", async () => {
    const id = await subscriber("sender@example.com");
    const link = linkFor({ subscriberId: id });
    // The account's name (the platform of this test names it "unsubscribe").
    const byAccount = await t.call("GET", link, { key: null });
    expect(byAccount.text).toContain("Unsubscribe from unsubscribe?");
    expect((await t.call("PATCH", "/api/v1/portal-settings", { body: { sender_name: "Acme Newsletter" } })).body.sender_name).toBe("Acme Newsletter");
    const page = await t.call("GET", link, { key: null });
    expect(page.text).toContain("<h1>Unsubscribe from Acme Newsletter?</h1>");
    // All marketing mail from that sender, every list; not "these emails".
    expect(page.text).toContain("You will get no more marketing email from Acme Newsletter: no newsletters and no offers, from any of its lists.");
    expect(page.text).toContain("Messages you asked for, such as receipts or password resets, still arrive.");
    expect(page.text).not.toMatch(/these emails/i);
    const done = await oneClick(link);
    expect(done.text).toContain("You will get no more marketing email from Acme Newsletter, from any of its lists.");
    expect(done.text).not.toMatch(/these emails/i);
    // Markup in a name is text.
    await t.call("PATCH", "/api/v1/portal-settings", { body: { sender_name: "<b>Acme</b> & Co" } });
    expect((await t.call("GET", link, { key: null })).text).toContain("Unsubscribe from &#60;b&#62;Acme&#60;/b&#62; &#38; Co?");
    await t.call("PATCH", "/api/v1/portal-settings", { body: { sender_name: null } });
  });
});

describe("one-click unsubscribe is the platform's one 'unsubscribe from everything' (issue 16 review)", () => {
  it("leaves every public list, as the preference portal's unsubscribe-all does; private segments stay", async () => {
    expect((await t.call("POST", "/api/v1/tags", { body: { name: "weekly", is_public: true } })).status).toBe(201);
    expect((await t.call("POST", "/api/v1/tags", { body: { name: "segment-a", is_public: false } })).status).toBe(201);
    const res = await t.call("POST", "/api/v1/subscribers", { body: { email: "everything@example.com", tags: ["weekly", "segment-a"] } });
    const id = res.body.id as string;
    expect((await oneClick(linkFor({ subscriberId: id }))).status).toBe(200);
    const token = (await t.call("POST", `/api/v1/subscribers/${id}/preference-token`)).body.token as string;
    const view = await t.call("GET", "/api/v1/preference-center", { key: null, headers: { authorization: `Bearer ${token}` } });
    expect({ status: view.body.status, subscribed: view.body.subscribed_tags }).toEqual({ status: "unsubscribed", subscribed: [] });
    expect((await t.call("GET", `/api/v1/subscribers/${id}`)).body.tags).toEqual(["segment-a"]);
    // One operation, audited as the link's: the status and the list left, each with source one_click.
    const events = (await t.call("GET", `/api/v1/subscribers/${id}/events`)).body.items as Array<{ type: string; source: string; data: Record<string, unknown> }>;
    expect(events.filter((e) => e.type !== "subscriber.created" && e.type !== "subscriber.tag_added").map((e) => [e.type, e.source])).toEqual([
      ["subscriber.status_changed", "one_click"],
      ["subscriber.tag_removed", "one_click"],
    ]);
  });

  it("remembers a bounced subscriber's unsubscribe: when the bounce is cleared they stay unsubscribed", async () => {
    const id = await subscriber("bounced-then-out@example.com");
    await t.call("PATCH", `/api/v1/subscribers/${id}`, { body: { status: "bounced" } });
    const done = await oneClick(linkFor({ subscriberId: id }));
    expect(done.status).toBe(200);
    expect(done.text).toContain("You are unsubscribed");
    expect(await statusOf(id)).toBe("bounced");
    const events = (await t.call("GET", `/api/v1/subscribers/${id}/events`)).body.items as Array<{ type: string; source: string }>;
    expect(events.map((e) => [e.type, e.source])).toContainEqual(["subscriber.opted_out", "one_click"]);
    // An operator clears the bounce later: the person's opt-out stands.
    const cleared = await t.call("PATCH", `/api/v1/subscribers/${id}`, { body: { status: "active" } });
    expect(cleared.status).toBe(200);
    expect(cleared.body.status).toBe("unsubscribed");
    // Now it is the status: set active again only when they opted in again.
    expect((await t.call("PATCH", `/api/v1/subscribers/${id}`, { body: { status: "active" } })).body.status).toBe("active");
  });

  it("keeps a bounced subscriber's unsubscribe across a hop to complained: clearing that later still gives unsubscribed (issue 16 review)", async () => {
    const id = await subscriber("bounced-complained-out@example.com");
    await t.call("PATCH", `/api/v1/subscribers/${id}`, { body: { status: "bounced" } });
    expect((await oneClick(linkFor({ subscriberId: id }))).status).toBe(200);
    const complained = await t.call("PATCH", `/api/v1/subscribers/${id}`, { body: { status: "complained" } });
    expect({ status: complained.status, subscriber: complained.body.status }).toEqual({ status: 200, subscriber: "complained" });
    // The verdict lifted: the person's opt-out stands, no marketing resumes.
    expect((await t.call("PATCH", `/api/v1/subscribers/${id}`, { body: { status: "active" } })).body.status).toBe("unsubscribed");
  });

  it("lets the person take their opt-out back themselves: a list joined on the preference portal while bounced makes clearing the bounce give active", async () => {
    expect((await t.call("POST", "/api/v1/tags", { body: { name: "monthly", is_public: true } })).status).toBe(201);
    const id = await subscriber("bounced-out-in@example.com");
    await t.call("PATCH", `/api/v1/subscribers/${id}`, { body: { status: "bounced" } });
    expect((await oneClick(linkFor({ subscriberId: id }))).status).toBe(200);
    const token = (await t.call("POST", `/api/v1/subscribers/${id}/preference-token`)).body.token as string;
    const asSubscriber = { key: null, headers: { authorization: `Bearer ${token}` } };
    const tag = ((await t.call("GET", "/api/v1/preference-center", asSubscriber)).body.available_tags as Array<{ id: string; name: string }>).find((x) => x.name === "monthly")!;
    const joined = await t.call("POST", `/api/v1/preference-center/tags/${tag.id}/subscribe`, asSubscriber);
    expect({ status: joined.status, subscriber: joined.body.status }).toEqual({ status: 200, subscriber: "bounced" });
    expect((await t.call("PATCH", `/api/v1/subscribers/${id}`, { body: { status: "active" } })).body.status).toBe("active");
    // The integrator adding a list is no opt-in of the person's: that opt-out stands.
    const other = await subscriber("bounced-out-api@example.com");
    await t.call("PATCH", `/api/v1/subscribers/${other}`, { body: { status: "bounced" } });
    expect((await oneClick(linkFor({ subscriberId: other }))).status).toBe(200);
    expect((await t.call("POST", `/api/v1/subscribers/${other}/tags`, { body: { tags: ["monthly"] } })).status).toBe(200);
    expect((await t.call("PATCH", `/api/v1/subscribers/${other}`, { body: { status: "active" } })).body.status).toBe("unsubscribed");
  });

  it("says what is wrong with a body no retry can fix, in the reader's language", async () => {
    const id = await subscriber("wrong-body@example.com", "de");
    const link = linkFor({ subscriberId: id });
    const plain = await oneClick(link, ONE_CLICK, "text/plain");
    expect(plain.status).toBe(415);
    expect(plain.text).not.toContain("try again in a moment");
    expect(plain.text).toContain("This address only takes the one-click unsubscribe request");
    const nope = await oneClick(link, "List-Unsubscribe=Nope");
    expect(nope.status).toBe(400);
    expect(nope.text).toContain("This address only takes the one-click unsubscribe request");
    expect(nope.text).not.toContain("try again in a moment");
    // The browser's language where the page knows no subscriber yet.
    const german = await t.call("POST", link, { key: null, raw: "List-Unsubscribe=Nope", headers: { "content-type": "application/x-www-form-urlencoded", "accept-language": "de" } });
    expect(german.text).toContain('<html lang="de">');
    expect(german.text).toContain("Diese Adresse nimmt nur die Ein-Klick-Abmeldung an");
    for (const [lang, text] of [["fr", "Cette adresse n’accepte que la demande de désabonnement en un clic"], ["it", "Questo indirizzo accetta solo la richiesta di disiscrizione con un clic"]]) {
      const page = await t.call("POST", link, { key: null, raw: "List-Unsubscribe=Nope", headers: { "content-type": "application/x-www-form-urlencoded", "accept-language": lang! } });
      expect(page.text).toContain(text);
    }
    expect(await statusOf(id)).toBe("active");
  });

  it("refuses a flood of one-click posts with one link past the link's budget (429), a page or problem+json", async () => {
    const id = await subscriber("flood@example.com");
    const link = linkFor({ subscriberId: id });
    const statuses: number[] = [];
    for (let i = 0; i < 20; i++) statuses.push((await oneClick(link)).status);
    expect(statuses.filter((s) => s === 200).length).toBeLessThanOrEqual(5);
    expect(statuses.slice(0, 1)).toEqual([200]);
    expect(statuses.slice(5)).toEqual(Array(15).fill(429));
    expect(await statusOf(id)).toBe("unsubscribed");
    const page = await oneClick(link);
    expect(page.status).toBe(429);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    expect(Number(page.headers.get("retry-after"))).toBeGreaterThan(0);
    const asJson = await t.call("POST", link, { key: null, raw: ONE_CLICK, headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" } });
    expect({ status: asJson.status, code: asJson.body.code }).toEqual({ status: 429, code: "rate_limited" });
    expect(Number(asJson.headers.get("retry-after"))).toBeGreaterThan(0);
  });
});
