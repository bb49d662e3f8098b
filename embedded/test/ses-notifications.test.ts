import { Webhook } from "standardwebhooks";
import { snsTestSigner, startSesEmulator, type SesEmulator, type SnsTestSigner } from "@emailsvc/testing";
import { GENEROUS_RATE_LIMIT_ENV } from "../../services/gateway/test/support/harness";
import { Receiver } from "../../services/webhooks/test/receiver";
import type { DeliveryConfig } from "../../services/delivery/src/config";
import { allItems, eventually, startTestPlatform, type TestPlatform } from "./support/platform-client";

// SES's notifications end to end: live mail sent through a local SES
// (aws-ses-v2-local), then what SNS would post about it, signed with a key of
// our own, POSTed to the gateway's public route as SNS posts it (JSON as
// text/plain). The delivery service fetches the signing certificate through
// a stand-in of SNS's HTTPS (no setting can hold one: configOverrides); the
// rest is the platform's own code. The email shows delivered or bounced, a
// hard bounce suppresses the address and bounces the subscriber, each change
// sends its signed webhook, and what is forged, of another topic or malformed
// is refused with its code.

const TOPIC = "arn:aws:sns:eu-west-1:123456789012:ses-events";
const MJML = "<mjml><mj-body><mj-section><mj-column><mj-text>Your order has shipped.</mj-text></mj-column></mj-section></mj-body></mjml>";

describe.each(["embedded", "mongodb"] as const)("SES notifications through the gateway (%s)", (store) => {
  let t: TestPlatform;
  let ses: SesEmulator;
  let sns: SnsTestSigner;
  let liveKey: string;
  let receiver: Receiver;
  let secret: string;

  beforeAll(async () => {
    ses = await startSesEmulator();
    sns = snsTestSigner();
    receiver = await Receiver.start();
    t = await startTestPlatform(
      `ses-notifications-${store}`,
      {
        ...GENEROUS_RATE_LIMIT_ENV,
        EMAIL_PROVIDER: "ses",
        SES_REGION: "eu-west-1",
        SES_ENDPOINT: ses.endpoint,
        SES_CONFIGURATION_SET: "emailsvc-events",
        AWS_ACCESS_KEY_ID: "AKIATESTONLY",
        AWS_SECRET_ACCESS_KEY: "test-only-secret",
        SES_NOTIFICATION_TOPIC_ARNS: TOPIC,
        WEBHOOK_ALLOW_HTTP: "true",
        WEBHOOK_ALLOW_PRIVATE_RANGES: "127.0.0.0/8",
      },
      { mongo: store === "mongodb", configOverrides: { delivery: (config: DeliveryConfig) => ({ ...config, sesCertificateFetcher: (url: string) => sns.fetch(url) }) } },
    );
    liveKey = (await t.call("POST", `/admin/v1/accounts/${t.accountId}/api-keys`, { admin: true, body: { mode: "live" } })).body.key;
    const tpl = await t.call("POST", "/api/v1/templates", { key: liveKey, body: { name: "Shipped", slug: "shipped", subject: "Shipped", mjml_content: MJML, category: "transactional" } });
    expect(tpl.status).toBe(201);
    const hook = await t.call("POST", "/api/v1/webhooks", { key: liveKey, body: { url: `http://127.0.0.1:${receiver.port}/mail`, events: ["email.delivered", "email.bounced"] } });
    expect(hook.status).toBe(201);
    secret = hook.body.secret;
  }, 60_000);

  afterAll(async () => {
    await t?.close();
    await ses?.close();
    await receiver?.close();
    sns?.close();
  });

  /** As SNS posts: its JSON, as text/plain, no credentials. */
  const post = (message: object) =>
    t.call("POST", "/api/v1/providers/ses/notifications", { key: "", raw: JSON.stringify(message), headers: { "content-type": "text/plain; charset=UTF-8" } });

  async function sentEmail(to: string) {
    const sent = await t.call("POST", "/api/v1/emails/send", { key: liveKey, body: { template_slug: "shipped", to } });
    expect(sent.status).toBe(202);
    const email = await eventually(
      () => t.call("GET", `/api/v1/emails/${sent.body.id}`, { key: liveKey }),
      (res) => res.body.status === "sent",
    );
    expect(email.body.provider_message_id).toBe(ses.sent.find((m) => m.to.includes(to))!.messageId);
    return email.body as { id: string; provider_message_id: string };
  }
  const event = (type: string, messageId: string, extra: object) => ({ eventType: type, mail: { messageId, source: "no-reply@localhost", destination: [] }, ...extra });

  it("a Delivery shows the email delivered; a Permanent bounce shows it bounced hard, suppresses the address and bounces the subscriber; repeats change nothing", async () => {
    const fine = await sentEmail(`fine-${store}@example.org`);
    const delivered = sns.notification(TOPIC, event("Delivery", fine.provider_message_id, { delivery: { recipients: [`fine-${store}@example.org`], smtpResponse: "250 2.0.0 OK" } }));
    expect((await post(delivered)).body).toEqual({ outcome: "applied" });
    expect((await post(delivered)).body).toEqual({ outcome: "unchanged" });
    const deliveredEmail = await t.call("GET", `/api/v1/emails/${fine.id}`, { key: liveKey });
    expect(deliveredEmail.body.status).toBe("delivered");
    expect(deliveredEmail.body.history.map((c: { status: string }) => c.status)).toEqual(["queued", "sent", "delivered"]);

    const gone = `gone-${store}@example.org`;
    const subscriber = await t.call("POST", "/api/v1/subscribers", { key: liveKey, body: { email: gone } });
    expect(subscriber.status).toBe(201);
    const bouncing = await sentEmail(gone);
    const bounce = sns.notification(
      TOPIC,
      event("Bounce", bouncing.provider_message_id, {
        bounce: { bounceType: "Permanent", bounceSubType: "General", bouncedRecipients: [{ emailAddress: gone, action: "failed", status: "5.1.1", diagnosticCode: `smtp; 550 5.1.1 <${gone}>: user unknown` }] },
      }),
    );
    const taken = await post(bounce);
    expect(taken.status).toBe(200);
    expect(taken.body).toEqual({ outcome: "applied" });
    expect((await post(bounce)).body).toEqual({ outcome: "unchanged" });
    const bounced = await t.call("GET", `/api/v1/emails/${bouncing.id}`, { key: liveKey });
    expect(bounced.body).toMatchObject({ status: "bounced", bounce: { type: "hard", diagnostic: "550 5.1.1 <recipient>: user unknown" } });
    const listed = await eventually(
      () => allItems<{ email: string; reason: string }>((path) => t.call("GET", path, { key: liveKey }), "/api/v1/suppressions"),
      (items) => items.some((s) => s.email === gone),
    );
    expect(listed.filter((s) => s.email === gone).map((s) => s.reason)).toEqual(["hard_bounce"]);
    const moved = await eventually(
      () => t.call("GET", `/api/v1/subscribers/${subscriber.body.id}`, { key: liveKey }),
      (res) => res.body.status === "bounced",
    );
    expect(moved.body.status).toBe("bounced");

    // One signed webhook per change, none for the repeats.
    const hooks = await eventually(async () => receiver.to("/mail"), (list) => list.length >= 2);
    const bodies = hooks.map((h) => new Webhook(secret).verify(h.body, h.headers) as { type: string; data: { email_id: string } });
    expect(bodies.map((b) => `${b.type} ${b.data.email_id}`).sort()).toEqual([`email.bounced ${bouncing.id}`, `email.delivered ${fine.id}`].sort());
  });

  it("refuses a forged message (403), another topic (403) and a body that is no SNS message (400), changing nothing", async () => {
    const kept = await sentEmail(`kept-${store}@example.org`);
    const bounce = (options?: { forged?: boolean }, topic = TOPIC) =>
      sns.notification(topic, event("Bounce", kept.provider_message_id, { bounce: { bounceType: "Permanent", bouncedRecipients: [{ emailAddress: `kept-${store}@example.org` }] } }), options);
    const forged = await post(bounce({ forged: true }));
    expect([forged.status, forged.body.code]).toEqual([403, "sns_signature_invalid"]);
    const other = await post(bounce({}, "arn:aws:sns:eu-west-1:123456789012:not-ours"));
    expect([other.status, other.body.code]).toEqual([403, "sns_topic_not_allowed"]);
    const malformed = await post({ Type: "Notification" });
    expect([malformed.status, malformed.body.code]).toEqual([400, "sns_message_malformed"]);
    expect((await t.call("GET", `/api/v1/emails/${kept.id}`, { key: liveKey })).body.status).toBe("sent");
  });
});

describe("SES notifications not configured, and the route's bounds", () => {
  it("answer 404 provider_notifications_disabled; a body over 256 KiB is a 413; a client address past its budget a 429 before anything is read", async () => {
    const t = await startTestPlatform("ses-notifications-off", { ...GENEROUS_RATE_LIMIT_ENV, RATE_LIMIT_PROVIDER_NOTIFICATIONS: "3/60s" });
    try {
      const post = (raw: string) => t.call("POST", "/api/v1/providers/ses/notifications", { key: "", raw, headers: { "content-type": "text/plain" } });
      const off = await post("{}");
      expect([off.status, off.body.code]).toEqual([404, "provider_notifications_disabled"]);
      const large = await post(JSON.stringify({ Type: "Notification", Message: "x".repeat(256 * 1024) }));
      expect([large.status, large.body.code]).toEqual([413, "payload_too_large"]);
      expect((await post("{}")).status).toBe(404);
      const limited = await post("{}");
      expect([limited.status, limited.body.code]).toEqual([429, "rate_limited"]);
      expect(limited.headers.get("retry-after")).toMatch(/^\d+$/);
    } finally {
      await t.close();
    }
  });
});
