import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "@emailsvc/telemetry";
import { openMongoStore } from "@emailsvc/storage";
import { startPlatform } from "../src/platform";
import { GENEROUS_RATE_LIMIT_ENV } from "../../services/gateway/test/support/harness";
import { ADMIN_TOKEN, eventually, startTestPlatform, type TestPlatform } from "./support/platform-client";
import { freePort } from "@emailsvc/testing";

// Triggers through the real platform: the subscribers service's events reach
// the campaigns service over the bus, which sends through delivery (sandboxed:
// test-mode key), on the embedded store and on the MongoDB-compatible server.

const MJML = (text: string) => `<mjml><mj-body><mj-section><mj-column><mj-text>${text}</mj-text></mj-column></mj-section></mj-body></mjml>`;

interface EmailJson {
  id: string;
  to: string;
  template_id: string;
  status: string;
  error: string | null;
}

describe.each(["embedded", "mongodb"] as const)("triggers (%s)", (store) => {
  let t: TestPlatform;
  let welcome: string;
  let other: string;
  beforeAll(async () => {
    t = await startTestPlatform(`triggers-${store}`, undefined, { mongo: store === "mongodb" });
    const template = async (name: string, text: string) => {
      const res = await t.call("POST", "/api/v1/templates", { body: { name, subject: `${name} {{metadata.first_name}}`, category: "transactional", mjml_content: MJML(text) } });
      expect(res.status).toBe(201);
      return res.body.id as string;
    };
    welcome = await template("Welcome", "Hello {{metadata.first_name}}");
    other = await template("Other", "Something else");
    for (const name of ["vip", "news"]) expect((await t.call("POST", "/api/v1/tags", { body: { name } })).status).toBe(201);
  }, 60_000);
  afterAll(() => t?.close());

  const emails = async () => (await t.call("GET", "/api/v1/emails?limit=500")).body.items as EmailJson[];
  const emailsTo = async (address: string) => (await emails()).filter((e) => e.to === address);
  const until = (address: string, n: number) => eventually(() => emailsTo(address), (list) => list.length >= n && list.every((e) => e.status === "sent"));
  const trigger = async (body: Record<string, unknown>) => {
    const res = await t.call("POST", "/api/v1/triggers", { body });
    expect(res.status).toBe(201);
    return res.body.id as string;
  };
  const subscriber = async (email: string, extra: Record<string, unknown> = {}) => {
    const res = await t.call("POST", "/api/v1/subscribers", { body: { email, ...extra } });
    expect(res.status).toBe(201);
    return res.body.id as string;
  };

  /**
   * The fires of trigger `triggerId` for a subscriber as their export shows them,
   * once each has been decided (no longer pending): what the campaigns service
   * recorded, which a test can wait for instead of waiting for a while.
   */
  const decidedFires = async (subscriberId: string, triggerId: string) => {
    const fires = async () =>
      ((await t.call("GET", `/api/v1/subscribers/${subscriberId}/export`)).body.trigger_sends as Array<{ trigger_id: string; state: string; reason: string | null }>)
        .filter((f) => f.trigger_id === triggerId)
        .map(({ state, reason }) => ({ state, reason }));
    return eventually(fires, (list) => list.length > 0 && list.every((f) => f.state !== "pending"));
  };

  it("lists the event types", async () => {
    const res = await t.call("GET", "/api/v1/event-types");
    expect(res.status).toBe(200);
    expect(res.body.items.map((e: { name: string }) => e.name)).toEqual([
      "subscriber.created",
      "subscriber.tag_added",
      "subscriber.tag_removed",
      "subscriber.unsubscribed",
    ]);
  });

  it("sends the welcome template to each new subscriber, once, with their variables; a disabled trigger sends nothing", async () => {
    const id = await trigger({ event_type: "subscriber.created", template_id: welcome, description: "Welcome mail" });
    const read = await t.call("GET", `/api/v1/triggers/${id}`);
    expect(read.body).toMatchObject({ event_type: "subscriber.created", template_id: welcome, is_active: true, delay_seconds: 0, tag: "" });

    await subscriber("ada@example.com", { metadata: { first_name: "Ada" } });
    const [mail] = await until("ada@example.com", 1);
    expect(mail!.template_id).toBe(welcome);
    const sandboxed = await t.call("GET", `/api/v1/emails/${mail!.id}/sandbox`);
    expect(sandboxed.body.subject).toBe("Welcome Ada");
    expect(sandboxed.body.html).toContain("Hello Ada");

    // Disabled: the next subscriber gets nothing from it. A second trigger on the
    // same event shows that the event was handled: the fires of one event are
    // recorded together, so once the witness's fire is sent, a fire of the
    // disabled trigger would be in bob's export too.
    expect((await t.call("PATCH", `/api/v1/triggers/${id}`, { body: { is_active: false } })).body.is_active).toBe(false);
    const witness = await trigger({ event_type: "subscriber.created", template_id: other });
    const bob = await subscriber("bob@example.com");
    expect(await decidedFires(bob, witness)).toEqual([{ state: "sent", reason: null }]);
    const firedForBob = (await t.call("GET", `/api/v1/subscribers/${bob}/export`)).body.trigger_sends as Array<{ trigger_id: string }>;
    expect(firedForBob.map((f) => f.trigger_id)).toEqual([witness]);
    expect((await until("bob@example.com", 1)).map((e) => e.template_id)).toEqual([other]);
    expect(await emailsTo("ada@example.com")).toHaveLength(1);
    expect((await t.call("DELETE", `/api/v1/triggers/${witness}`)).status).toBe(204);
    expect((await t.call("DELETE", `/api/v1/triggers/${id}`)).status).toBe(204);
    expect((await t.call("GET", `/api/v1/triggers/${id}`)).status).toBe(404);
  });

  it("fires on the tag it names only, and on unsubscribing", async () => {
    const sub = await subscriber("tagged@example.com");
    const onVip = await trigger({ event_type: "subscriber.tag_added", template_id: welcome, tag: "VIP" });
    const onLeave = await trigger({ event_type: "subscriber.unsubscribed", template_id: other });
    expect((await t.call("POST", `/api/v1/subscribers/${sub}/tags`, { body: { tags: ["news"] } })).status).toBe(200);
    expect((await t.call("POST", `/api/v1/subscribers/${sub}/tags`, { body: { tags: ["vip"] } })).status).toBe(200);
    const tagged = await until("tagged@example.com", 1);
    expect(tagged.map((e) => e.template_id)).toEqual([welcome]);
    expect((await t.call("PATCH", `/api/v1/subscribers/${sub}`, { body: { status: "unsubscribed" } })).status).toBe(200);
    const after = await until("tagged@example.com", 2);
    expect(after.map((e) => e.template_id).sort()).toEqual([welcome, other].sort());
    for (const id of [onVip, onLeave]) await t.call("DELETE", `/api/v1/triggers/${id}`);
  });


  it("welcomes only who joined: not a subscriber created unsubscribed, nor the record a one-click unsubscribe of a non-subscriber makes", async () => {
    const promo = await t.call("POST", "/api/v1/templates", {
      body: { name: "Promo", subject: "Promo", category: "marketing", mjml_content: MJML("Promo") },
    });
    expect(promo.status).toBe(201);
    // A stranger (no subscriber) gets a marketing mail; its one-click link is the way out.
    const mailed = await t.call("POST", "/api/v1/emails/send", { body: { template_slug: promo.body.slug, to: "clicker@example.com" } });
    expect(mailed.status).toBe(202);
    await until("clicker@example.com", 1);
    const message = await t.call("GET", `/api/v1/emails/${mailed.body.id}/sandbox`);
    const link = new URL(String(message.body.headers["List-Unsubscribe"]).slice(1, -1));

    const id = await trigger({ event_type: "subscriber.created", template_id: welcome, description: "Welcome aboard" });
    const clicked = await t.call("POST", `${link.pathname}${link.search}`, {
      key: null,
      raw: "List-Unsubscribe=One-Click",
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    expect(clicked.status).toBe(200);
    const clicker = await t.call("GET", "/api/v1/subscribers/by-email/clicker@example.com");
    expect(clicker.body.status).toBe("unsubscribed");
    // An import of someone who had opted out elsewhere.
    const optedOut = await subscriber("optedout@example.com", { status: "unsubscribed" });
    // Neither joined: the trigger's fire for each is recorded, decided skipped (never pending, then sent).
    expect(await decidedFires(clicker.body.id, id)).toEqual([{ state: "skipped", reason: "created_not_active" }]);
    expect(await decidedFires(optedOut, id)).toEqual([{ state: "skipped", reason: "created_not_active" }]);
    expect(await emailsTo("optedout@example.com")).toEqual([]);
    expect((await emailsTo("clicker@example.com")).map((e) => e.template_id)).toEqual([promo.body.id]);
    // Someone who did join is welcomed.
    const joined = await subscriber("joined@example.com");
    expect(await decidedFires(joined, id)).toEqual([{ state: "sent", reason: null }]);
    expect((await until("joined@example.com", 1)).map((e) => e.template_id)).toEqual([welcome]);
    expect((await t.call("DELETE", `/api/v1/triggers/${id}`)).status).toBe(204);
  });

  it("says nothing to who unsubscribed from everything: the lists that leaves fire no tag_removed trigger, leaving one list does (issue 16 review)", async () => {
    expect((await t.call("POST", "/api/v1/tags", { body: { name: "digest", is_public: true } })).status).toBe(201);
    // A transactional "You left a list": a category an unsubscribed subscriber still gets.
    const onLeave = await trigger({ event_type: "subscriber.tag_removed", template_id: other, description: "You left a list" });
    const leftOne = await subscriber("left-one@example.com", { tags: ["digest"] });
    expect((await t.call("DELETE", `/api/v1/subscribers/${leftOne}/tags/digest`)).status).toBe(200);
    expect(await decidedFires(leftOne, onLeave)).toEqual([{ state: "sent", reason: null }]);
    expect((await until("left-one@example.com", 1)).map((e) => e.template_id)).toEqual([other]);

    // Unsubscribing from everything (the preference center's; the portal page
    // and the one-click link run the same operation) leaves every public list:
    // each fire is recorded skipped, and nothing is mailed.
    const leftAll = await subscriber("left-all@example.com", { tags: ["digest"] });
    const token = (await t.call("POST", `/api/v1/subscribers/${leftAll}/preference-token`)).body.token as string;
    const done = await t.call("POST", "/api/v1/preference-center/unsubscribe-all", { key: null, headers: { authorization: `Bearer ${token}` } });
    expect({ status: done.status, subscribed: done.body.subscribed_tags }).toEqual({ status: 200, subscribed: [] });
    expect(await decidedFires(leftAll, onLeave)).toEqual([{ state: "skipped", reason: "unsubscribed_all" }]);
    expect(await emailsTo("left-all@example.com")).toEqual([]);
    expect((await t.call("DELETE", `/api/v1/triggers/${onLeave}`)).status).toBe(204);
  });

  it("mails nobody who cannot receive the template's category: bounced get no transactional mail, unsubscribed no marketing", async () => {
    const news = await t.call("POST", "/api/v1/templates", {
      body: { name: "News", subject: "News", category: "marketing", mjml_content: MJML("News") },
    });
    expect(news.status).toBe(201);
    const bounced = await subscriber("bounced@example.com");
    const leaving = await subscriber("leaving@example.com");
    expect((await t.call("PATCH", `/api/v1/subscribers/${bounced}`, { body: { status: "bounced" } })).status).toBe(200);
    const onVip = await trigger({ event_type: "subscriber.tag_added", template_id: welcome, tag: "vip" });
    const onLeave = await trigger({ event_type: "subscriber.unsubscribed", template_id: news.body.id });
    expect((await t.call("POST", `/api/v1/subscribers/${bounced}/tags`, { body: { tags: ["vip"] } })).status).toBe(200);
    expect((await t.call("PATCH", `/api/v1/subscribers/${leaving}`, { body: { status: "unsubscribed" } })).status).toBe(200);
    const settled = (address: string) => eventually(() => emailsTo(address), (list) => list.length === 1 && list[0]!.status !== "queued");
    expect((await settled("bounced@example.com")).map((e) => [e.template_id, e.status, e.error])).toEqual([[welcome, "suppressed", "recipient_bounced"]]);
    expect((await settled("leaving@example.com")).map((e) => [e.template_id, e.status, e.error])).toEqual([
      [news.body.id, "suppressed", "recipient_unsubscribed"],
    ]);
    for (const trg of [onVip, onLeave]) expect((await t.call("DELETE", `/api/v1/triggers/${trg}`)).status).toBe(204);
  });

  it("refuses bad triggers with a clear error", async () => {
    const bad = async (body: Record<string, unknown>, status: number, code?: string) => {
      const res = await t.call("POST", "/api/v1/triggers", { body });
      expect({ body, status: res.status, code: code ? res.body.code : undefined }).toEqual({ body, status, code });
    };
    await bad({ event_type: "subscriber.exploded", template_id: welcome }, 400);
    await bad({ event_type: "subscriber.created", template_id: welcome, tag: "vip" }, 400, "validation_failed");
    await bad({ event_type: "subscriber.tag_added", template_id: welcome, tag: "nope" }, 400, "unknown_tags");
    await bad({ event_type: "subscriber.created", template_id: "tpl_00000000000000000000000000" }, 404, "template_not_found");
    await bad({ event_type: "subscriber.created", template_id: welcome, delay_seconds: 2592001 }, 400);
    expect((await t.call("GET", "/api/v1/triggers?limit=500")).body.items).toEqual([]);
  });
});

describe("erasure and triggers", () => {
  it("forgets an erased subscriber's fires (read in the campaigns service's own MongoDB database)", async () => {
    const t = await startTestPlatform("triggers-erasure", undefined, { mongo: true });
    const db = await openMongoStore({ url: t.mongo!.url, dbName: `${t.mongo!.dbPrefix}campaigns` });
    try {
      const template = await t.call("POST", "/api/v1/templates", { body: { name: "Later", subject: "Later", category: "transactional", mjml_content: MJML("Later") } });
      const trigger = await t.call("POST", "/api/v1/triggers", { body: { event_type: "subscriber.created", template_id: template.body.id, delay_seconds: 3600 } });
      expect(trigger.status).toBe(201);
      const sub = (await t.call("POST", "/api/v1/subscribers", { body: { email: "erased@example.com" } })).body.id as string;
      const fires = () => db.collection("trigger_fires").count({ subscriber_id: sub });
      expect(await eventually(fires, (n) => n === 1)).toBe(1);
      expect((await t.call("DELETE", `/api/v1/subscribers/${sub}`)).status).toBe(204);
      expect(await eventually(fires, (n) => n === 0)).toBe(0);
    } finally {
      await db.close();
      await t.close();
    }
  }, 60_000);
});

describe("a trigger over the test-mode quota", () => {
  // Issue 16's second review: delivery's refusal of a fire past the account's
  // test-mode quota (429 `test_mode_quota_exceeded`, with Retry-After) was
  // taken for "delivery unavailable": retried every minute at most, a warning
  // each time, and never shown on the trigger. It now waits for the
  // Retry-After, and the trigger says why.
  it("leaves the fire pending until delivery's Retry-After, and shows test_mode_quota_exceeded on the trigger", async () => {
    const t = await startTestPlatform("triggers-quota", { ...GENEROUS_RATE_LIMIT_ENV, TEST_MODE_DAILY_LIMIT: "2" });
    try {
      const template = await t.call("POST", "/api/v1/templates", { body: { name: "Hello", subject: "Hello", category: "transactional", mjml_content: MJML("Hello") } });
      expect(template.status).toBe(201);
      const trigger = await t.call("POST", "/api/v1/triggers", { body: { event_type: "subscriber.created", template_id: template.body.id } });
      expect(trigger.status).toBe(201);
      const ids: string[] = [];
      for (const email of ["one@example.com", "two@example.com", "three@example.com"]) {
        const created = await t.call("POST", "/api/v1/subscribers", { body: { email } });
        expect(created.status).toBe(201);
        ids.push(created.body.id as string);
      }

      const shown = await eventually(
        async () => (await t.call("GET", `/api/v1/triggers/${trigger.body.id}`)).body as { is_active: boolean; last_failure: { reason: string; at: string } | null },
        (body) => body.last_failure !== null,
        400,
      );
      expect(shown).toMatchObject({ is_active: true, last_failure: { reason: "test_mode_quota_exceeded" } });
      // Two of the three fires went out (the day's quota); the third waits, neither failed nor skipped.
      const states = async () =>
        (
          await Promise.all(
            ids.map(async (id) => ((await t.call("GET", `/api/v1/subscribers/${id}/export`)).body.trigger_sends as Array<{ state: string }>).map((f) => f.state)),
          )
        ).flat();
      const decided = await eventually(states, (list) => list.filter((s) => s === "sent").length === 2, 400);
      expect(decided.sort()).toEqual(["pending", "sent", "sent"]);
      const emails = (await t.call("GET", "/api/v1/emails")).body.items as EmailJson[];
      expect(emails).toHaveLength(2);
    } finally {
      await t.close();
    }
  }, 90_000);
});

describe("a delayed trigger", () => {
  it("sends after its delay, across a restart", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "trigger-delay-"));
    const portalPort = await freePort();
    const start = () =>
      startPlatform({
        dataDir,
        gatewayPort: 0,
        gatewayHost: "127.0.0.1",
        adminToken: ADMIN_TOKEN,
        logger: createLogger("trigger-delay", "silent"),
        env: { PORTAL_PORT: String(portalPort), OUTBOX_SWEEP_INTERVAL_MS: "500", ...GENEROUS_RATE_LIMIT_ENV },
      });
    let platform = await start();
    try {
      const call = async (method: string, path: string, body?: unknown, key?: string) => {
        const res = await fetch(platform.gatewayUrl + path, {
          method,
          headers: { ...(key ? { "x-api-key": key } : { authorization: `Bearer ${ADMIN_TOKEN}` }), "content-type": "application/json" },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        return { status: res.status, body: (await res.json()) as Record<string, unknown> & { items?: EmailJson[] } };
      };
      const account = (await call("POST", "/admin/v1/accounts", { name: "Delay" })).body.id as string;
      const key = (await call("POST", `/admin/v1/accounts/${account}/api-keys`, { mode: "test" })).body.key as string;
      const template = await call("POST", "/api/v1/templates", { name: "Later", subject: "Later", category: "transactional", mjml_content: MJML("Later") }, key);
      expect((await call("POST", "/api/v1/triggers", { event_type: "subscriber.created", template_id: template.body.id, delay_seconds: 4 }, key)).status).toBe(201);
      const later = (await call("POST", "/api/v1/subscribers", { email: "later@example.com" }, key)).body.id as string;
      // Stopped once the fire is recorded, before the delay ran out: the fire is stored, not in memory.
      const fires = await eventually(
        async () => ((await call("GET", `/api/v1/subscribers/${later}/export`, undefined, key)).body.trigger_sends ?? []) as Array<{ state: string }>,
        (list) => list.length > 0,
      );
      expect(fires.map((f) => f.state)).toEqual(["pending"]);
      expect((await call("GET", "/api/v1/emails", undefined, key)).body.items).toEqual([]);
      await platform.close();
      platform = await start();
      const sent = await eventually(
        async () => (await call("GET", "/api/v1/emails", undefined, key)).body.items ?? [],
        (items) => items.length === 1 && items[0]!.status === "sent",
      );
      expect(sent.map((e) => e.to)).toEqual(["later@example.com"]);
    } finally {
      await platform.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});
