import Ajv2020 from "ajv/dist/2020";
import addFormats from "ajv-formats";
import { Webhook } from "standardwebhooks";
import type { OpenApiDocument } from "../../services/gateway/src/openapi";
import { GENEROUS_RATE_LIMIT_ENV } from "../../services/gateway/test/support/harness";
import { Receiver } from "../../services/webhooks/test/receiver";
import { eventually, startTestPlatform, type TestPlatform } from "./support/platform-client";

// Webhooks through the real platform's REST API: a subscriber created and an
// email sent (sandboxed: test-mode key) reach a receiver as signed Standard
// Webhooks messages that the specification's reference library verifies, on
// the embedded store and on the MongoDB-compatible server.

const MJML = `<mjml><mj-body><mj-section><mj-column><mj-text>Hello</mj-text></mj-column></mj-section></mj-body></mjml>`;

describe.each(["embedded", "mongodb"] as const)("webhooks through the REST API (%s)", (store) => {
  let t: TestPlatform;
  let receiver: Receiver;
  beforeAll(async () => {
    receiver = await Receiver.start();
    // The receiver is on this machine: the operator's allowance, as a development setup would set it.
    t = await startTestPlatform(
      `webhooks-${store}`,
      { ...GENEROUS_RATE_LIMIT_ENV, WEBHOOK_ALLOW_HTTP: "true", WEBHOOK_ALLOW_PRIVATE_RANGES: "127.0.0.0/8", WEBHOOK_RETRY_DELAYS_SECONDS: "1" },
      { mongo: store === "mongodb" },
    );
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
  });

  const url = (path: string) => `http://127.0.0.1:${receiver.port}${path}`;
  /** Checks a body that arrived against the served document's `webhooks` entry of its type. */
  const documented = async (body: string) => {
    const doc = (await (await fetch(`${t.url}/api/v1/openapi.json`)).json()) as OpenApiDocument;
    const type = (JSON.parse(body) as { type: string }).type;
    const schema = doc.webhooks?.[type]?.post?.requestBody?.content["application/json"]?.schema;
    expect({ type, documented: schema !== undefined }).toEqual({ type, documented: true });
    const ajv = new Ajv2020({ strict: false });
    addFormats(ajv);
    const validate = ajv.compile(schema!);
    expect({ type, errors: validate(JSON.parse(body)) ? null : validate.errors }).toEqual({ type, errors: null });
  };
  const arrived = (path: string, n = 1) => eventually(async () => receiver.to(path), (list) => list.length >= n);

  it("signs a subscriber.created and an email.sent webhook that the reference library verifies; the secret is shown once", async () => {
    const created = await t.call("POST", "/api/v1/webhooks", { body: { url: url("/events"), events: ["subscriber.created", "email.sent"], description: "CRM sync" } });
    expect(created.status).toBe(201);
    const { id, secret } = created.body as { id: string; secret: string };
    expect(secret).toMatch(/^whsec_/);
    expect(created.body).toMatchObject({ url: url("/events"), events: ["subscriber.created", "email.sent"], is_active: true, disabled_reason: null });
    const got = await t.call("GET", `/api/v1/webhooks/${id}`);
    expect(got.status).toBe(200);
    expect(got.body).not.toHaveProperty("secret");
    expect(JSON.stringify((await t.call("GET", "/api/v1/webhooks")).body)).not.toContain(secret.slice(6));

    const subscriber = await t.call("POST", "/api/v1/subscribers", { body: { email: "webhook-reader@example.com", metadata: { first_name: "Ada" } } });
    expect(subscriber.status).toBe(201);
    const [createdHook] = await arrived("/events");
    const body = new Webhook(secret).verify(createdHook!.body, createdHook!.headers) as { type: string; data: Record<string, unknown> };
    expect(body).toMatchObject({ type: "subscriber.created", data: { subscriber_id: subscriber.body.id, status: "active" } });
    // Ids and statuses only: neither the address nor the metadata.
    expect(createdHook!.body).not.toContain("webhook-reader");
    expect(createdHook!.body).not.toContain("Ada");

    const template = await t.call("POST", "/api/v1/templates", { body: { name: "Receipt", subject: "Receipt", category: "transactional", mjml_content: MJML } });
    expect(template.status).toBe(201);
    const sent = await t.call("POST", "/api/v1/emails/send", { body: { template_slug: template.body.slug, to: "webhook-reader@example.com", variables: {} } });
    expect(sent.status).toBe(202);
    const hooks = await arrived("/events", 2);
    const emailHook = hooks.map((h) => ({ h, body: new Webhook(secret).verify(h.body, h.headers) as { type: string; data: Record<string, unknown> } })).find((x) => x.body.type === "email.sent");
    // The recipient's address, which the integrator sent to, read from delivery as the webhook goes out.
    expect(emailHook?.body.data).toEqual({
      email_id: sent.body.id,
      to: "webhook-reader@example.com",
      subscriber_id: subscriber.body.id,
      campaign_id: null,
      status: "sent",
      reason: null,
    });

    // Both as the served document's `webhooks` describe them.
    for (const hook of hooks) await documented(hook.body);
    // The log shows both, delivered at the first attempt with the receiver's 200.
    const log = await t.call("GET", `/api/v1/webhooks/${id}/deliveries`);
    expect(log.status).toBe(200);
    expect(log.body.items.map((d: { event_type: string }) => d.event_type).sort()).toEqual(["email.sent", "subscriber.created"]);
    for (const d of log.body.items) expect(d).toMatchObject({ state: "delivered", attempts: 1, response_code: 200, next_attempt_at: null });
  });

  it("retries a receiver answering 500, logs both attempts, and replays on request", async () => {
    const created = await t.call("POST", "/api/v1/webhooks", { body: { url: url("/flaky"), events: ["subscriber.created"] } });
    receiver.answer("/flaky", 500);
    await t.call("POST", "/api/v1/subscribers", { body: { email: "flaky-hook@example.com" } });
    const delivery = await eventually(
      async () => (await t.call("GET", `/api/v1/webhooks/${created.body.id}/deliveries`)).body.items[0],
      (d: any) => d?.state === "delivered",
    );
    expect(delivery.attempt_log.map((a: { response_code: number }) => a.response_code)).toEqual([500, 200]);
    const replay = await t.call("POST", `/api/v1/webhooks/${created.body.id}/deliveries/${delivery.id}/replay`);
    expect(replay.status).toBe(200);
    const hooks = await arrived("/flaky", 3);
    expect(new Set(hooks.map((h) => h.headers["webhook-id"]))).toEqual(new Set([delivery.id]));
    new Webhook(created.body.secret).verify(hooks[2]!.body, hooks[2]!.headers);
  });

  it("rotates the secret: both verify during the overlap, and GET says until when", async () => {
    const created = await t.call("POST", "/api/v1/webhooks", { body: { url: url("/rotated"), events: ["subscriber.created"] } });
    const rotated = await t.call("POST", `/api/v1/webhooks/${created.body.id}/rotate-secret`);
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).not.toBe(created.body.secret);
    expect(rotated.body.previous_secret_expires_at).not.toBeNull();
    await t.call("POST", "/api/v1/subscribers", { body: { email: "rotation-hook@example.com" } });
    const [hook] = await arrived("/rotated");
    new Webhook(created.body.secret).verify(hook!.body, hook!.headers);
    new Webhook(rotated.body.secret).verify(hook!.body, hook!.headers);
  });

  it("refuses bad input with a stable code and changes nothing; another account sees none of it", async () => {
    const before = (await t.call("GET", "/api/v1/webhooks?limit=500")).body.items.length;
    const unknown = await t.call("POST", "/api/v1/webhooks", { body: { url: url("/x"), events: ["email.opened"] } });
    expect(unknown.status).toBe(400);
    expect(unknown.body.code).toBe("validation_failed");
    expect(JSON.stringify(unknown.body)).toContain("email.opened");
    const metadata = await t.call("POST", "/api/v1/webhooks", { body: { url: "http://169.254.169.254/latest/meta-data/", events: ["*"] } });
    expect([metadata.status, metadata.body.code]).toEqual([400, "webhook_url_forbidden"]);
    const extra = await t.call("POST", "/api/v1/webhooks", { body: { url: url("/x"), events: ["*"], secret: "whsec_mine" } });
    expect(extra.status).toBe(400);
    expect((await t.call("GET", "/api/v1/webhooks?limit=500")).body.items).toHaveLength(before);

    const mine = (await t.call("GET", "/api/v1/webhooks?limit=1")).body.items[0];
    const account = await t.call("POST", "/admin/v1/accounts", { admin: true, body: { name: "other" } });
    const key = (await t.call("POST", `/admin/v1/accounts/${account.body.id}/api-keys`, { admin: true, body: { mode: "test" } })).body.key;
    expect((await t.call("GET", `/api/v1/webhooks/${mine.id}`, { key })).status).toBe(404);
    expect((await t.call("GET", `/api/v1/webhooks/${mine.id}/deliveries`, { key })).status).toBe(404);
    expect((await t.call("DELETE", `/api/v1/webhooks/${mine.id}`, { key })).status).toBe(404);
    expect((await t.call("GET", "/api/v1/webhooks", { key })).body.items).toEqual([]);
    // Deleted by its owner: gone, with its log.
    expect((await t.call("DELETE", `/api/v1/webhooks/${mine.id}`)).status).toBe(204);
    expect((await t.call("GET", `/api/v1/webhooks/${mine.id}`)).status).toBe(404);
  });
});
