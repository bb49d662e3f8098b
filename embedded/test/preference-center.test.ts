import { createHmac } from "node:crypto";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { portal as portalApi } from "@emailsvc/proto";
import { createServiceTransport } from "@emailsvc/grpc";
import { callHeaders } from "@emailsvc/tenancy";
import { KeyRing, signToken } from "@emailsvc/tokens";
import { eventually, startTestPlatform, type TestPlatform } from "./support/platform-client";

// The preference-center API through the real platform: a token minted by the
// integrator opens the subscriber's own API (gateway -> portal -> subscribers),
// for that subscriber only, and dies with the subscriber.

let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform("preference-center");
});
afterAll(() => t?.close());

async function subscriber(email: string, tags: string[] = []): Promise<string> {
  const res = await t.call("POST", "/api/v1/subscribers", { body: { email, tags } });
  expect(res.status).toBe(201);
  return res.body.id as string;
}

async function tag(name: string, isPublic: boolean, description = ""): Promise<string> {
  const res = await t.call("POST", "/api/v1/tags", { body: { name, is_public: isPublic, description } });
  expect(res.status).toBe(201);
  return res.body.id as string;
}

async function tokenFor(id: string): Promise<string> {
  const res = await t.call("POST", `/api/v1/subscribers/${id}/preference-token`);
  expect(res.status).toBe(201);
  return res.body.token as string;
}

const portal = (token: string, method: string, path: string) =>
  t.call(method, `/api/v1/preference-center${path}`, { key: null, headers: { authorization: `Bearer ${token}` } });

const names = (tags: Array<{ name: string }>) => tags.map((x) => x.name).sort();

let news: string, offers: string, vip: string, gone: string;
beforeAll(async () => {
  news = await tag("news", true, "Weekly news");
  offers = await tag("offers", true);
  vip = await tag("vip", false);
  gone = await tag("gone", true);
  expect((await t.call("DELETE", `/api/v1/tags/${gone}`)).status).toBe(204);
});

describe("preference token", () => {
  it("is minted for a subscriber of the key's tenant, with its page URL and expiry", async () => {
    const id = await subscriber("mint@example.com");
    const before = Date.now();
    const res = await t.call("POST", `/api/v1/subscribers/${id}/preference-token`);
    expect(res.status).toBe(201);
    expect(res.headers.get("cache-control")).toBe("no-store");
    // The page this platform serves (PREFERENCES_URL when set).
    expect(res.body.url).toBe(`${t.platform.portalUrl!.replace("127.0.0.1", "localhost")}/preferences?token=${encodeURIComponent(res.body.token as string)}`);
    const expires = Date.parse(res.body.expires_at as string);
    expect(expires).toBeGreaterThan(before + 7 * 24 * 3600 * 1000 - 5000);
    expect(expires).toBeLessThan(before + 7 * 24 * 3600 * 1000 + 5000);
    // The token carries ids only: never the address.
    const payload = Buffer.from((res.body.token as string).split(".")[1]!, "base64url").toString();
    expect(payload).not.toContain("mint@example.com");
    expect(JSON.parse(payload)).toMatchObject({ aud: "preferences", acc: t.accountId, mode: "test", sub: id });
  });

  it("is a 404 for an unknown subscriber and a 401 without a key", async () => {
    expect((await t.call("POST", "/api/v1/subscribers/sub_00000000000000000000000000/preference-token")).status).toBe(404);
    const id = await subscriber("nokey@example.com");
    expect((await t.call("POST", `/api/v1/subscribers/${id}/preference-token`, { key: null })).status).toBe(401);
  });
});

describe("preference-center API", () => {
  it("shows public tags only: held ones as subscribed, every public one as available", async () => {
    const id = await subscriber("view@example.com", ["news", "vip"]);
    const res = await portal(await tokenFor(id), "GET", "");
    expect(res.status).toBe(200);
    expect(res.body.email).toBe("view@example.com");
    expect(res.body.status).toBe("active");
    expect(res.body.subscribed_tags).toEqual([{ id: news, name: "news", description: "Weekly news", translations: {} }]);
    // Neither the private tag (held or not) nor the deleted one.
    expect(names(res.body.available_tags)).toEqual(["news", "offers"]);
  });

  it("joins a public tag, refuses a private, deleted or unknown one, and leaves", async () => {
    const id = await subscriber("join@example.com");
    const token = await tokenFor(id);
    const joined = await portal(token, "POST", `/tags/${offers}/subscribe`);
    expect(joined.status).toBe(200);
    expect(names(joined.body.subscribed_tags)).toEqual(["offers"]);
    for (const refused of [vip, gone, "tag_00000000000000000000000000"]) {
      const res = await portal(token, "POST", `/tags/${refused}/subscribe`);
      expect(res.status).toBe(404);
      expect(res.body.code).toBe("tag_not_found");
    }
    expect((await portal(token, "POST", "/tags/not-an-id/subscribe")).status).toBe(400);
    const left = await portal(token, "POST", `/tags/${offers}/unsubscribe`);
    expect(left.status).toBe(200);
    expect(left.body.subscribed_tags).toEqual([]);
    // Leaving a tag not held changes nothing.
    expect((await portal(token, "POST", `/tags/${news}/unsubscribe`)).status).toBe(200);
    const subscriberNow = await t.call("GET", `/api/v1/subscribers/${id}`);
    expect(subscriberNow.body.tags).toEqual([]);
    // Every change is in the audit trail, made by the portal.
    const events = (await t.call("GET", `/api/v1/subscribers/${id}/events`)).body.items as Array<{ type: string; actor: string }>;
    expect(events.filter((e) => e.type !== "subscriber.created").map((e) => [e.type, e.actor])).toEqual([
      ["subscriber.tag_added", "portal"],
      ["subscriber.tag_removed", "portal"],
    ]);
  });

  it("unsubscribes from everything, and joining a tag later subscribes again", async () => {
    const id = await subscriber("all@example.com", ["news"]);
    const token = await tokenFor(id);
    const res = await portal(token, "POST", "/unsubscribe-all");
    expect(res.status).toBe(200);
    expect(res.body.status).toBe("unsubscribed");
    // No list shows as subscribed any more: every public one is left (issue 16, defect 13).
    expect(res.body.subscribed_tags).toEqual([]);
    expect((await portal(token, "GET", "")).body.subscribed_tags).toEqual([]);
    expect((await t.call("GET", `/api/v1/subscribers/${id}`)).body.status).toBe("unsubscribed");
    expect((await portal(token, "POST", `/tags/${offers}/subscribe`)).body.status).toBe("active");
  });

  it("says who receives what as the subscribers service decides it (issue 16 review: the page does not decide it itself)", async () => {
    const id = await subscriber("mailability@example.com", ["news"]);
    const token = await tokenFor(id);
    expect((await portal(token, "GET", "")).body.mailability).toEqual({ marketing: null, transactional: null });
    expect((await portal(token, "POST", "/unsubscribe-all")).body.mailability).toEqual({ marketing: "unsubscribed", transactional: null });
    await t.call("PATCH", `/api/v1/subscribers/${id}`, { body: { status: "complained" } });
    expect((await portal(token, "GET", "")).body.mailability).toEqual({ marketing: "complained", transactional: "complained" });
  });

  it("gives each tag's translations, for a page in the subscriber's language", async () => {
    const translated = await t.call("POST", "/api/v1/tags", {
      body: { name: "events", is_public: true, description: "Invitations", translations: { de: { name: "Veranstaltungen", description: "Einladungen" }, it: { name: "Eventi" } } },
    });
    const id = await subscriber("translations@example.com", ["events"]);
    const res = await portal(await tokenFor(id), "GET", "");
    const expected = { id: translated.body.id, name: "events", description: "Invitations", translations: { de: { name: "Veranstaltungen", description: "Einladungen" }, it: { name: "Eventi", description: "" } } };
    expect(res.body.subscribed_tags).toEqual([expected]);
    expect(res.body.available_tags).toContainEqual(expected);
  });

  it("leaves a bounced subscriber bounced when they join a tag", async () => {
    const id = await subscriber("bounce@example.com");
    await t.call("PATCH", `/api/v1/subscribers/${id}`, { body: { status: "bounced" } });
    expect((await portal(await tokenFor(id), "POST", `/tags/${news}/subscribe`)).body.status).toBe("bounced");
  });

  it("erases the account, and every token of the subscriber dies with it", async () => {
    const id = await subscriber("erase@example.com", ["news"]);
    const token = await tokenFor(id);
    const second = await tokenFor(id);
    expect((await portal(token, "DELETE", "/account")).status).toBe(204);
    await eventually(
      async () => (await t.call("GET", `/api/v1/subscribers/${id}`)).status,
      (status) => status === 404,
    );
    for (const dead of [token, second]) {
      const res = await portal(dead, "GET", "");
      expect(res.status).toBe(401);
      expect(res.body.code).toBe("invalid_preference_token");
    }
  });
});

describe("export and language", () => {
  it("exports every service's part, for the subscriber and for the integrator, and logs where changes came from", async () => {
    const id = await subscriber("export@example.com", ["news", "vip"]);
    const token = await tokenFor(id);
    // A change through the API of the token, with its client.
    const joined = await t.call("POST", `/api/v1/preference-center/tags/${offers}/subscribe`, {
      key: null,
      headers: { authorization: `Bearer ${token}`, "user-agent": "ExportTest/1.0" },
    });
    expect(joined.status).toBe(200);
    const res = await portal(token, "GET", "/export");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-disposition")).toContain("attachment");
    const data = res.body;
    expect(data.export).toMatchObject({ format_version: 1, subscriber_id: id });
    expect(data.profile).toMatchObject({ id, email: "export@example.com", status: "active" });
    // Private tags too: the export holds everything.
    expect((data.tags as Array<{ name: string }>).map((x) => x.name).sort()).toEqual(["news", "offers", "vip"]);
    expect(Array.isArray(data.emails)).toBe(true);
    expect(Array.isArray(data.campaign_memberships)).toBe(true);
    expect(Array.isArray(data.trigger_sends)).toBe(true);
    expect(data.about_this_data.rights.length).toBeGreaterThan(3);
    const portalChange = (data.audit_trail as Array<Record<string, unknown>>).find((e) => e.type === "subscriber.tag_added" && e.source === "portal");
    expect(portalChange).toMatchObject({ actor: "portal", user_agent: "ExportTest/1.0" });
    expect(portalChange!.ip).toMatch(/^127\.0\.0\.1$|^::1$/);

    // The integrator's copy of the same document.
    const theirs = await t.call("GET", `/api/v1/subscribers/${id}/export`);
    expect(theirs.status).toBe(200);
    expect(theirs.body.profile.email).toBe("export@example.com");
    expect((await t.call("GET", "/api/v1/subscribers/sub_00000000000000000000000000/export")).status).toBe(404);
    expect((await t.call("GET", `/api/v1/subscribers/${id}/export`, { key: null })).status).toBe(401);
  });

  it("sets and clears the subscriber's language", async () => {
    const id = await subscriber("sprache2@example.com");
    const token = await tokenFor(id);
    const put = (locale: unknown) =>
      t.call("PUT", "/api/v1/preference-center/locale", { key: null, headers: { authorization: `Bearer ${token}` }, body: { locale } });
    const res = await put("de");
    expect(res.status).toBe(200);
    expect(res.body.locale).toBe("de");
    expect((await t.call("GET", `/api/v1/subscribers/${id}`)).body.locale).toBe("de");
    expect((await put("es")).status).toBe(400);
    expect((await put(null)).body.locale).toBeNull();
    // Behind the REST schema, the portal passes the subscribers service's verdict on as INVALID_ARGUMENT (not as an outage).
    const portalService = createClient(portalApi.PreferenceCenterService, createServiceTransport(t.platform.serviceUrls.portal));
    const call = { tenant: { accountId: t.accountId, mode: "test" as const }, actor: "portal", requestId: "" };
    const refused = await portalService.setLocale({ subscriberId: id, locale: "xx" }, { headers: callHeaders(call) }).catch((err: unknown) => ConnectError.from(err));
    expect(refused).toBeInstanceOf(ConnectError);
    expect((refused as ConnectError).code).toBe(Code.InvalidArgument);
  });
});

describe("preference link in mail", () => {
  it("fills {{preference_center_url}} per message, and the link opens the subscriber's own preferences", async () => {
    const id = await subscriber("footer@example.com", ["news"]);
    const template = await t.call("POST", "/api/v1/templates", {
      body: {
        name: "Footer",
        slug: "footer",
        subject: "Hello",
        category: "transactional",
        mjml_content: '<mjml><mj-body><mj-section><mj-column><mj-text><a href="{{preference_center_url}}">Preferences</a></mj-text></mj-column></mj-section></mj-body></mjml>',
      },
    });
    expect(template.status).toBe(201);
    const sent = await t.call("POST", "/api/v1/emails/send", { body: { template_slug: "footer", to: "footer@example.com" } });
    expect(sent.status).toBe(202);
    const message = await eventually(
      async () => t.call("GET", `/api/v1/emails/${sent.body.id}/sandbox`),
      (res) => res.status === 200,
    );
    // Handlebars escapes `=` in the href (valid HTML: a browser reads it as `=`).
    const link = /href="(http:\/\/localhost:\d+\/preferences\?token(?:=|&#x3D;)[^"]+)"/.exec(message.body.html as string)?.[1];
    expect(link?.startsWith(`${t.platform.portalUrl!.replace("127.0.0.1", "localhost")}/preferences?token`)).toBe(true);
    const token = new URL(link!.replace(/&#x3D;/g, "=")).searchParams.get("token")!;
    const res = await portal(token, "GET", "");
    expect(res.status).toBe(200);
    expect(res.body.email).toBe("footer@example.com");
    expect(names(res.body.subscribed_tags)).toEqual(["news"]);
  });
});

describe("preference tokens refused", () => {
  let id: string;
  let good: string;
  beforeAll(async () => {
    id = await subscriber("refused@example.com");
    good = await tokenFor(id);
  });

  const refused = async (token: string, expected: RegExp) => {
    const res = await portal(token, "GET", "");
    expect(res.status).toBe(401);
    expect(res.body.code).toBe("invalid_preference_token");
    expect(res.body.detail).toMatch(expected);
    expect(res.headers.get("www-authenticate")).toContain('error="invalid_token"');
  };

  it("without a token", async () => {
    const res = await t.call("GET", "/api/v1/preference-center", { key: null });
    expect(res.status).toBe(401);
    expect(res.body.code).toBe("missing_preference_token");
  });

  it("expired, tampered, alg none, another key, another purpose", async () => {
    const ring = t.platform.tokenKeys;
    await refused(signToken(ring, { purpose: "preferences", accountId: t.accountId, mode: "test", subscriberId: id }, { ttlSeconds: 60, now: Date.now() - 120_000 }), /expired/);
    const [header, payload, signature] = good.split(".") as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, "base64url").toString());
    const other = Buffer.from(JSON.stringify({ ...claims, sub: "sub_00000000000000000000000000" })).toString("base64url");
    await refused(`${header}.${other}.${signature}`, /signature/);
    const none = Buffer.from(JSON.stringify({ alg: "none", typ: "JWT" })).toString("base64url");
    await refused(`${none}.${payload}.`, /not a well-formed|algorithm/);
    await refused(`${none}.${payload}.${signature}`, /algorithm/);
    const stranger = new KeyRing([{ id: ring.current.id, secret: Buffer.alloc(32, 7) }]);
    await refused(signToken(stranger, { purpose: "preferences", accountId: t.accountId, mode: "test", subscriberId: id }, { ttlSeconds: 60 }), /signature/);
    const unknownKid = new KeyRing([{ id: "elsewhere", secret: Buffer.alloc(32, 7) }]);
    await refused(signToken(unknownKid, { purpose: "preferences", accountId: t.accountId, mode: "test", subscriberId: id }, { ttlSeconds: 60 }), /key/);
    await refused(signToken(ring, { purpose: "unsubscribe", accountId: t.accountId, mode: "test", subscriberId: id }, { ttlSeconds: 60 }), /not meant/);
    // HS256 over the same claims with the key's id but a guessed secret.
    const forged = `${header}.${payload}`;
    await refused(`${forged}.${createHmac("sha256", "secret").update(forged).digest("base64url")}`, /signature/);
  });

  it("for another tenant's subscriber: the token names its own tenant, where the id is unknown", async () => {
    const ring = t.platform.tokenKeys;
    const foreign = signToken(ring, { purpose: "preferences", accountId: "acc_00000000000000000000000000", mode: "test", subscriberId: id }, { ttlSeconds: 60 });
    await refused(foreign, /no longer exists/);
    // The live mode of the same account is another tenant too.
    await refused(signToken(ring, { purpose: "preferences", accountId: t.accountId, mode: "live", subscriberId: id }, { ttlSeconds: 60 }), /no longer exists/);
  });
});
