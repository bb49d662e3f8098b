import { KeyRing, signToken, type TokenSubject } from "@emailsvc/tokens";
import { startTestPlatform, type TestPlatform } from "./support/platform-client";

// One-click unsubscribe (RFC 8058) through the real platform: the link of a
// marketing mail's List-Unsubscribe header. A GET shows a page and changes
// nothing (mail scanners follow links); a POST unsubscribes at once.

let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform("unsubscribe");
});
afterAll(() => t?.close());

const ONE_CLICK = "List-Unsubscribe=One-Click";

async function subscriber(email: string): Promise<string> {
  const res = await t.call("POST", "/api/v1/subscribers", { body: { email } });
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
    expect((await oneClick(link)).status).toBe(200);
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
      expect(page.status).toBe(401);
      expect(page.text).toContain("This link is not valid");
      expect((await oneClick(link)).status).toBe(401);
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
    expect((await oneClick(link, "List-Unsubscribe=Yes")).status).toBe(400);
    expect((await oneClick(link, `${ONE_CLICK}&x=1`)).status).toBe(400);
    expect((await oneClick(link, "")).status).toBe(400);
    expect((await oneClick(link, JSON.stringify({ "List-Unsubscribe": "One-Click" }), "application/json")).status).toBe(415);
    expect((await t.call("GET", "/unsubscribe", { key: null })).status).toBe(400);
    expect(await statusOf(id)).toBe("active");
  });
});
