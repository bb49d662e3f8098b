import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fromBinary } from "@bufbuild/protobuf";
import { KafkaEventBus, type ReceivedEvent, type Subscription } from "@emailsvc/events";
import { events } from "@emailsvc/proto";
import { createLogger } from "@emailsvc/telemetry";
import type { OpenApiDocument } from "../../services/gateway/src/openapi";
import { responseChecker, sendChecked, type TestResponse } from "../../services/gateway/test/support/harness";
import { freePort } from "@emailsvc/testing";
import { startPlatform, type RunningPlatform } from "../src/platform";

// End to end through the REST API: real gateway, real subscribers service, real
// gRPC between them, on the embedded defaults and on MongoDB (FerretDB) + Kafka.
// Every response is checked against the OpenAPI document the gateway serves.

const ADMIN = "e2e-admin-token-0123456789abcdef";

type Mode = "embedded" | "mongodb+kafka";

function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run through \`npm test\`, whose setup starts the servers`);
  return value;
}

describe.each<Mode>(["embedded", "mongodb+kafka"])("REST API end to end (%s)", (mode) => {
  let platform: RunningPlatform;
  let dataDir: string;
  let check: (method: string, path: string, res: TestResponse) => void;
  let keyA: string;
  let keyB: string;
  let accountA: string;
  let kafkaEvents: ReceivedEvent[] = [];
  let kafka: KafkaEventBus | undefined;
  let kafkaSub: Subscription | undefined;

  async function call(method: string, path: string, opts: { key?: string | null; body?: unknown; raw?: string; headers?: Record<string, string>; admin?: boolean } = {}): Promise<TestResponse> {
    const headers: Record<string, string> = { ...opts.headers };
    const key = opts.key === undefined ? keyA : opts.key;
    if (key && !opts.admin) headers["x-api-key"] = key;
    if (opts.admin) headers.authorization = `Bearer ${ADMIN}`;
    let body: string | undefined;
    if (opts.raw !== undefined) body = opts.raw;
    else if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers["content-type"] ??= "application/json";
    }
    return sendChecked(check, platform.gatewayUrl, method, path, { headers, body });
  }

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "e2e-"));
    const real = mode === "mongodb+kafka";
    const mongoUrl = real ? env("MONGO_URL") : undefined;
    const brokers = real ? env("KAFKA_BROKERS") : undefined;
    if (real) {
      // A separate database set per run: the services' db names are fixed, so
      // point MONGO_URL at a fresh database prefix via the dataDir-independent name.
      kafka = new KafkaEventBus({ brokers: brokers!.split(","), clientId: "e2e-observer" });
      await kafka.ensureTopics(["subscriber.created"]);
      kafkaSub = await kafka.subscribe({
        group: `e2e-${Date.now()}`,
        topics: ["subscriber.created"],
        fromBeginning: false,
        handler: async (e) => {
          kafkaEvents.push(e);
        },
      });
    }
    platform = await startPlatform({
      dataDir,
      gatewayPort: 0,
      gatewayHost: "127.0.0.1",
      mongoUrl,
      kafkaBrokers: brokers,
      adminToken: ADMIN,
      logger: createLogger("e2e", "silent"),
      dbPrefix: `e2e${Date.now().toString(36)}_`,
      // Not the default 8081: suites run side by side.
      env: { PORTAL_PORT: String(await freePort()) },
    });
    const doc = (await (await fetch(`${platform.gatewayUrl}/api/v1/openapi.json`)).json()) as OpenApiDocument;
    check = responseChecker(doc);
    const a = await call("POST", "/admin/v1/accounts", { admin: true, body: { name: "A" } });
    accountA = a.body.id;
    keyA = (await call("POST", `/admin/v1/accounts/${accountA}/api-keys`, { admin: true, body: { mode: "test" } })).body.key;
    const b = await call("POST", "/admin/v1/accounts", { admin: true, body: { name: "B" } });
    keyB = (await call("POST", `/admin/v1/accounts/${b.body.id}/api-keys`, { admin: true, body: { mode: "test" } })).body.key;
  });

  afterAll(async () => {
    await kafkaSub?.stop();
    await kafka?.close();
    await platform?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("walks the subscriber lifecycle the spec describes", async () => {
    const created = await call("POST", "/api/v1/subscribers", { body: { email: "Ada@Example.com", tags: ["newsletter"], metadata: { plan: "pro" } } });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    expect(created.body).toMatchObject({ email: "Ada@Example.com", status: "active", tags: ["newsletter"], metadata: { plan: "pro" } });

    expect((await call("GET", `/api/v1/subscribers/${id}`)).body.id).toBe(id);
    expect((await call("GET", `/api/v1/subscribers/by-email/${encodeURIComponent("ada@example.COM")}`)).body.id).toBe(id);

    const tagged = await call("POST", `/api/v1/subscribers/${id}/tags`, { body: { tags: ["vip", "beta"] } });
    expect(tagged.status).toBe(200);
    expect(tagged.body.tags).toEqual(["beta", "newsletter", "vip"]);
    const untagged = await call("DELETE", `/api/v1/subscribers/${id}/tags/beta`);
    expect(untagged.body.tags).toEqual(["newsletter", "vip"]);

    const patched = await call("PATCH", `/api/v1/subscribers/${id}`, { body: { status: "unsubscribed", metadata: { plan: null, seats: 2 } } });
    expect(patched.body).toMatchObject({ status: "unsubscribed", metadata: { seats: 2 } });

    const active = await call("GET", "/api/v1/subscribers?status=active&limit=500");
    expect(active.body.items.map((s: { id: string }) => s.id)).not.toContain(id);
    const unsubscribed = await call("GET", "/api/v1/subscribers?status=unsubscribed");
    expect(unsubscribed.body.items.map((s: { id: string }) => s.id)).toContain(id);

    const trail = await call("GET", `/api/v1/subscribers/${id}/events`);
    expect(trail.body.items.map((e: { type: string }) => e.type)).toEqual([
      "subscriber.created",
      "subscriber.tag_added",
      "subscriber.tag_added",
      "subscriber.tag_removed",
      "subscriber.updated",
      "subscriber.status_changed",
    ]);
    for (const e of trail.body.items) {
      expect(e.occurred_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
      expect(e.actor).toMatch(/^api_key:key_/);
    }

    expect((await call("DELETE", `/api/v1/subscribers/${id}`)).status).toBe(204);
    expect((await call("GET", `/api/v1/subscribers/${id}`)).status).toBe(404);
    expect((await call("GET", `/api/v1/subscribers/${id}/events`)).status).toBe(404);
    // Erasure keeps the address suppressed (a keyed hash only): back only with the person's new opt-in.
    const again = await call("POST", "/api/v1/subscribers", { body: { email: "ada@example.com" } });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe("subscriber_suppressed");
    // A reason that shows nothing lifts nothing (issue 16, defect 11a): zero width space, BOM, word joiner, spaces, a tag character.
    // And the blank-looking symbols Unicode classes as neither space nor format (issue 16 review): Braille
    // pattern blank, the musical null notehead, the Khitan filler; the Hangul fillers, halfwidth too.
    const messages = new Set<string>();
    for (const reason of ["\u200b", "\ufeff\u2060 \u200b\u00a0", "\u{E0020}", "\u2800", " \u2800\u2800 ", "\u{1D159}", "\u{16FE4}", "\uffa0", "\u3164", "\u115f\u1160"]) {
      const refused = await call("POST", "/api/v1/subscribers", { body: { email: "ada@example.com", resubscribe: true, resubscribe_reason: reason } });
      expect({ status: refused.status, code: refused.body.code, fields: refused.body.errors?.map((e: { field: string }) => e.field) }).toEqual({
        status: 400,
        code: "validation_failed",
        fields: ["resubscribe_reason"],
      });
      messages.add(refused.body.errors[0].message);
    }
    // Refused by the gateway's pattern (the BMP) or by the subscribers service (beyond it): one rule, one message.
    expect([...messages]).toEqual(["1-500 characters with visible text (not only spaces or invisible characters such as U+200B or U+2800), no control characters"]);
    expect((await call("POST", "/api/v1/subscribers", { body: { email: "ada@example.com" } })).body.code).toBe("subscriber_suppressed");
    // Invisible characters around a reason are trimmed from what the audit trail keeps.
    const back = await call("POST", "/api/v1/subscribers", { body: { email: "ada@example.com", resubscribe: true, resubscribe_reason: "\u200bsigned up again\ufeff" } });
    expect(back.status).toBe(201);
    const recreated = (await call("GET", `/api/v1/subscribers/${back.body.id}/events`)).body.items[0];
    expect(recreated.data).toMatchObject({ resubscribe: true, resubscribe_reason: "signed up again" });
  });

  it("keeps a tag's name and description per language, checked, replaced as a whole (issue 16, defect 13)", async () => {
    const created = await call("POST", "/api/v1/tags", {
      body: { name: "weekly-digest", description: "Every Friday", is_public: true, translations: { de: { name: "Wochenrückblick", description: "Jeden Freitag" } } },
    });
    expect(created.status).toBe(201);
    expect(created.body.translations).toEqual({ de: { name: "Wochenrückblick", description: "Jeden Freitag" } });
    expect((await call("GET", `/api/v1/tags/${created.body.id}`)).body.translations).toEqual({ de: { name: "Wochenrückblick", description: "Jeden Freitag" } });
    // An update replaces them all; other fields keep theirs; {} removes them.
    const updated = await call("PATCH", `/api/v1/tags/${created.body.id}`, { body: { translations: { fr: { name: "Résumé hebdo" }, it: { name: "Riepilogo", description: "Ogni venerdì" } } } });
    expect(updated.body).toMatchObject({ name: "weekly-digest", description: "Every Friday", translations: { fr: { name: "Résumé hebdo", description: "" }, it: { name: "Riepilogo", description: "Ogni venerdì" } } });
    expect(Object.keys(updated.body.translations).sort()).toEqual(["fr", "it"]);
    expect((await call("PATCH", `/api/v1/tags/${created.body.id}`, { body: { description: "Fridays" } })).body.translations).toMatchObject({ fr: { name: "Résumé hebdo" } });
    expect((await call("PATCH", `/api/v1/tags/${created.body.id}`, { body: { translations: {} } })).body.translations).toEqual({});
    // A language the platform does not speak, a name that shows nothing, one too long: 400 naming the field, nothing stored.
    for (const [translations, field] of [
      [{ es: { name: "Resumen" } }, "translations.es"],
      [{ de: { name: "\u200b " } }, "translations.de.name"],
      [{ de: { name: "x".repeat(101) } }, "translations.de.name"],
      [{ de: { name: "ok", description: "d".repeat(501) } }, "translations.de.description"],
    ] as const) {
      const refused = await call("PATCH", `/api/v1/tags/${created.body.id}`, { body: { translations } });
      expect({ status: refused.status, fields: refused.body.errors?.map((e: { field: string }) => e.field) }).toEqual({ status: 400, fields: [field] });
    }
    expect((await call("GET", `/api/v1/tags/${created.body.id}`)).body.translations).toEqual({});
  });

  it("manages tags: create (private by default), read, list, update, delete", async () => {
    const tag = await call("POST", "/api/v1/tags", { body: { name: "weekly", description: "Weekly digest" } });
    expect(tag.status).toBe(201);
    expect(tag.body).toMatchObject({ name: "weekly", description: "Weekly digest", is_public: false });
    expect((await call("POST", "/api/v1/tags", { body: { name: "WEEKLY" } })).status).toBe(409);
    const updated = await call("PATCH", `/api/v1/tags/${tag.body.id}`, { body: { is_public: true } });
    expect(updated.body.is_public).toBe(true);
    expect((await call("GET", `/api/v1/tags/${tag.body.id}`)).body.name).toBe("weekly");
    const sub = await call("POST", "/api/v1/subscribers", { body: { email: "tagged@example.com", tags: ["weekly", "other"] } });
    expect((await call("DELETE", `/api/v1/tags/${tag.body.id}`)).status).toBe(204);
    expect((await call("GET", `/api/v1/subscribers/${sub.body.id}`)).body.tags).toEqual(["other"]);
    const list = await call("GET", "/api/v1/tags?limit=500");
    expect(list.body.items.map((t: { name: string }) => t.name)).not.toContain("weekly");
  });

  it("answers bad input with a clear problem and changes nothing", async () => {
    const countBefore = (await call("GET", "/api/v1/subscribers?limit=500")).body.items.length;
    const problems: Array<[TestResponse, number, string]> = [
      [await call("POST", "/api/v1/subscribers", { raw: '{"email": "x@example.com"', headers: { "content-type": "application/json" } }), 400, "invalid_json"],
      [await call("POST", "/api/v1/subscribers", { raw: "email=x@example.com", headers: { "content-type": "application/x-www-form-urlencoded" } }), 415, "unsupported_media_type"],
      [await call("POST", "/api/v1/subscribers", { body: { email: "x@example.com", favourite: 1 } }), 400, "validation_failed"],
      [await call("POST", "/api/v1/subscribers", { body: { email: "x@example.com", created_at: "2020-01-01T00:00:00Z" } }), 400, "validation_failed"],
      [await call("POST", "/api/v1/subscribers", { body: { tags: ["a"] } }), 400, "validation_failed"],
      [await call("POST", "/api/v1/subscribers", { body: { email: "not an email" } }), 400, "validation_failed"],
      [await call("POST", "/api/v1/subscribers", { body: { email: "x@example.com", metadata: { big: "x".repeat(600) } } }), 400, "validation_failed"],
      [await call("POST", "/api/v1/subscribers", { body: { email: "x@example.com", metadata: Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`k${i}`, "y".repeat(400)])) } }), 413, "metadata_too_large"],
      [await call("POST", "/api/v1/subscribers", { body: { email: "x@example.com", metadata: { pad: "z".repeat(300 * 1024) } } }), 413, "payload_too_large"],
      [await call("GET", "/api/v1/subscribers?limit=501"), 400, "validation_failed"],
      [await call("GET", "/api/v1/subscribers?limit=abc"), 400, "validation_failed"],
      [await call("GET", "/api/v1/subscribers?status=deleted"), 400, "validation_failed"],
      [await call("GET", "/api/v1/subscribers?cursor=eyJ2IjoxLCJhZnRlciI6InN1Yl9ub3BlIiwiZmlsdGVyIjoiIn0"), 400, "validation_failed"],
      [await call("GET", "/api/v1/subscribers", { key: null }), 401, "missing_api_key"],
      [await call("GET", "/api/v1/subscribers", { key: "sk_test_not_a_real_key_at_all_000000000000" }), 401, "invalid_api_key"],
    ];
    for (const [res, status, code] of problems) {
      expect({ status: res.status, code: res.body.code, type: res.headers.get("content-type") }).toEqual({
        status,
        code,
        type: expect.stringContaining("application/problem+json"),
      });
      expect(res.body.request_id).toBeTruthy();
      expect(res.text).not.toMatch(/at .*\.(js|ts):\d+/); // no stack traces
    }
    expect((await call("GET", "/api/v1/subscribers?limit=500")).body.items.length).toBe(countBefore);
    expect((await call("GET", "/api/v1/tags?limit=500")).body.items.map((t: { name: string }) => t.name)).not.toContain("a");
  });

  it("rejects a duplicate email with 409 naming the existing id, and lets one of concurrent creates win", async () => {
    const first = await call("POST", "/api/v1/subscribers", { body: { email: "dupe@example.com" } });
    const again = await call("POST", "/api/v1/subscribers", { body: { email: "DUPE@example.com" } });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ code: "email_taken", existing_id: first.body.id });

    const racers = await Promise.all(Array.from({ length: 6 }, () => call("POST", "/api/v1/subscribers", { body: { email: "race@example.com" } })));
    const won = racers.filter((r) => r.status === 201);
    expect(won).toHaveLength(1);
    for (const r of racers.filter((x) => x.status !== 201)) expect(r.body).toMatchObject({ status: 409, existing_id: won[0]!.body.id });
  });

  it("pages with next_cursor until it is empty", async () => {
    const fresh = await call("POST", "/admin/v1/accounts", { admin: true, body: { name: "Pager" } });
    const key = (await call("POST", `/admin/v1/accounts/${fresh.body.id}/api-keys`, { admin: true, body: { mode: "live" } })).body.key as string;
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await call("POST", "/api/v1/subscribers", { key, body: { email: `p${i}@example.com` } })).body.id);
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await call("GET", `/api/v1/subscribers?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, { key });
      seen.push(...page.body.items.map((s: { id: string }) => s.id));
      cursor = page.body.next_cursor ?? undefined;
    } while (cursor);
    expect(seen).toEqual(ids);
  });

  it("keeps accounts and modes apart, and a revoked key stops working", async () => {
    const mine = await call("POST", "/api/v1/subscribers", { body: { email: "private@example.com" } });
    expect((await call("GET", `/api/v1/subscribers/${mine.body.id}`, { key: keyB })).status).toBe(404);
    expect((await call("PATCH", `/api/v1/subscribers/${mine.body.id}`, { key: keyB, body: { status: "bounced" } })).status).toBe(404);
    expect((await call("DELETE", `/api/v1/subscribers/${mine.body.id}`, { key: keyB })).status).toBe(404);
    expect((await call("GET", `/api/v1/subscribers/by-email/private%40example.com`, { key: keyB })).status).toBe(404);
    expect((await call("GET", `/api/v1/subscribers/${mine.body.id}`)).body.status).toBe("active");

    const live = await call("POST", `/admin/v1/accounts/${accountA}/api-keys`, { admin: true, body: { mode: "live" } });
    expect((await call("GET", `/api/v1/subscribers/${mine.body.id}`, { key: live.body.key })).status).toBe(404);
    expect((await call("GET", "/api/v1/subscribers", { key: live.body.key })).status).toBe(200);
    const revoke = await call("DELETE", `/admin/v1/accounts/${accountA}/api-keys/${live.body.id}`, { admin: true });
    expect(revoke.status).toBe(200);
    const after = await call("GET", "/api/v1/subscribers", { key: live.body.key });
    expect(after.status).toBe(401);
  });

  if (mode === "mongodb+kafka") {
    it("publishes subscriber.created to Kafka with ids only", async () => {
      const created = await call("POST", "/api/v1/subscribers", { body: { email: "kafka-evt@example.com", metadata: { secret: "meta-secret" } } });
      const deadline = Date.now() + 20000;
      let event: ReceivedEvent | undefined;
      while (!event && Date.now() < deadline) {
        event = kafkaEvents.find((e) => e.key === created.body.id);
        if (!event) await new Promise((r) => setTimeout(r, 50));
      }
      expect(event).toBeDefined();
      const decoded = fromBinary(events.SubscriberCreatedSchema, event!.value);
      expect(decoded.subscriberId).toBe(created.body.id);
      expect(decoded.meta!.accountId).toBe(accountA);
      const raw = Buffer.from(event!.value).toString("latin1") + JSON.stringify(event!.headers);
      expect(raw).not.toContain("kafka-evt@example.com");
      expect(raw).not.toContain("meta-secret");
    });
  }
});
