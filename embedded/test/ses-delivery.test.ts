import { generateKeyPairSync } from "node:crypto";
import { startSesEmulator, type SesEmulator, type SesSentMessage, startTestDnsServer, type TestDnsServer } from "@emailsvc/testing";
import { simpleParser } from "mailparser";
import { GENEROUS_RATE_LIMIT_ENV } from "../../services/gateway/test/support/harness";
import { eventually, startTestPlatform, type TestPlatform } from "./support/platform-client";
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { dkimVerify } = require("mailauth/lib/dkim/verify") as {
  dkimVerify(message: Buffer, options: { resolver: (name: string, type: string) => Promise<string[][]> }): Promise<{
    results: Array<{ signingDomain: string; selector: string; algo: string; status: { result: string } }>;
  }>;
};

// The SES provider end to end: live mail through the REST API, delivery with
// EMAIL_PROVIDER=ses against a local SES (aws-ses-v2-local, behind the
// testing kit's recording front that keeps the raw bytes SES received), From
// a sending domain verified the way an integrator does it (a real DNS server
// holding its records), and the message checked with an independent DKIM
// verifier (mailauth).

const MJML = "<mjml><mj-body><mj-section><mj-column><mj-text>Your order {{order}} has shipped.</mj-text></mj-column></mj-section></mj-body></mjml>";
const NEWS_MJML = "<mjml><mj-body><mj-section><mj-column><mj-text>What is new this month.</mj-text></mj-column></mj-section></mj-body></mjml>";
const PLATFORM_KEY = generateKeyPairSync("rsa", { modulusLength: 2048 });

describe.each(["embedded", "mongodb"] as const)("Amazon SES provider (%s)", (store) => {
  let t: TestPlatform;
  let ses: SesEmulator;
  let dns: TestDnsServer;
  let liveKey: string;
  const domain = `ses-${store}.example.com`;

  beforeAll(async () => {
    ses = await startSesEmulator();
    dns = await startTestDnsServer();
    dns.txts.set("platform2026._domainkey.platform-mail.example", [`v=DKIM1; k=rsa; p=${PLATFORM_KEY.publicKey.export({ type: "spki", format: "der" }).toString("base64")}`]);
    t = await startTestPlatform(
      `ses-delivery-${store}`,
      {
        ...GENEROUS_RATE_LIMIT_ENV,
        // Deferred mail retried within seconds (read once deferrals are scheduled from the store).
        DELIVERY_RETRY_BACKOFF_SECONDS: "1",
        DELIVERY_RETRY_MAX_BACKOFF_SECONDS: "2",
        EMAIL_PROVIDER: "ses",
        SES_REGION: "eu-west-1",
        SES_ENDPOINT: ses.endpoint,
        SES_CONFIGURATION_SET: "emailsvc-events",
        AWS_ACCESS_KEY_ID: "AKIATESTONLY",
        AWS_SECRET_ACCESS_KEY: "test-only-secret",
        EMAIL_FROM: "Platform <no-reply@platform-mail.example>",
        SENDER_DOMAIN_DNS_SERVERS: dns.address,
        DKIM_PLATFORM_SELECTOR: "platform2026",
        DKIM_PLATFORM_KEY: PLATFORM_KEY.privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
      },
      { mongo: store === "mongodb" },
    );
    liveKey = (await t.call("POST", `/admin/v1/accounts/${t.accountId}/api-keys`, { admin: true, body: { mode: "live" } })).body.key;
    const tpl = await t.call("POST", "/api/v1/templates", { key: liveKey, body: { name: "Shipped", slug: "shipped", subject: "Order {{order}} shipped", mjml_content: MJML, category: "transactional" } });
    expect(tpl.status).toBe(201);
    // A sending domain, its records published and verified.
    const added = await t.call("POST", "/api/v1/domains", { key: liveKey, body: { name: domain } });
    expect(added.status).toBe(201);
    for (const record of added.body.records as Array<{ type: string; name: string; value: string }>) {
      if (record.type === "CNAME") dns.cnames.set(record.name, record.value);
      else dns.txts.set(record.name, [...(dns.txts.get(record.name) ?? []), record.value]);
    }
    const verified = await t.call("POST", `/api/v1/domains/${added.body.id}/verify`, { key: liveKey });
    expect(verified.body.status).toBe("verified");
  }, 60_000);

  afterAll(async () => {
    await t?.close();
    await ses?.close();
    await dns?.close();
  });

  /** The published zone, as a receiving server's DKIM verifier asks it. */
  const zone = async (name: string, type: string): Promise<string[][]> => {
    const texts = type === "TXT" ? dns.txts.get(name.toLowerCase()) : undefined;
    if (!texts) throw Object.assign(new Error("not found"), { code: "ENOTFOUND" });
    return texts.map((text) => [text]);
  };

  const sentTo = (address: string): SesSentMessage[] => ses.sent.filter((m) => m.to.includes(address));

  it("sends live mail through SES: From, To and Subject right, the raw message DKIM-signed so that an independent verifier passes it", async () => {
    const to = `buyer-${store}@example.org`;
    const sent = await t.call("POST", "/api/v1/emails/send", { key: liveKey, body: { template_slug: "shipped", to, from: { email: `orders@${domain}`, name: "Acme Orders" }, variables: { order: "A1" } } });
    expect(sent.status).toBe(202);
    const [message] = await eventually(
      async () => sentTo(to),
      (messages) => messages.length > 0,
    );
    expect(message).toMatchObject({ fromEmailAddress: `orders@${domain}`, to: [to], configurationSetName: "emailsvc-events" });
    const parsed = await simpleParser(message!.raw);
    expect(parsed.from?.value).toEqual([{ address: `orders@${domain}`, name: "Acme Orders" }]);
    expect(parsed.subject).toBe("Order A1 shipped");
    expect(parsed.messageId).toBe(`<${sent.body.id}@${domain}>`);
    expect(parsed.text).toContain("Your order A1 has shipped.");

    const verdict = await dkimVerify(message!.raw, { resolver: zone });
    expect(verdict.results.map((r) => ({ result: r.status.result, domain: r.signingDomain, algo: r.algo })).sort((a, b) => a.algo.localeCompare(b.algo))).toEqual([
      { result: "pass", domain, algo: "ed25519-sha256" },
      { result: "pass", domain, algo: "rsa-sha256" },
    ]);
    // The verifier is no rubber stamp: a changed Subject fails both signatures.
    const tampered = Buffer.from(message!.raw.toString("latin1").replace(/^Subject: .*$/m, "Subject: Order A1 cancelled"), "latin1");
    expect((await dkimVerify(tampered, { resolver: zone })).results.map((r) => r.status.result)).toEqual(["fail", "fail"]);

    // What the emulator itself parsed of it, and the email's record.
    const stored = (await ses.stored()).find((e) => e.messageId === message!.messageId);
    expect(stored).toMatchObject({ subject: "Order A1 shipped", destination: { to: [to] } });
    const email = await eventually(
      () => t.call("GET", `/api/v1/emails/${sent.body.id}`, { key: liveKey }),
      (res) => res.body.status === "sent",
    );
    // SES's MessageId kept on the email: what its bounce, complaint and delivery notifications name.
    expect(email.body).toMatchObject({ provider: "ses", attempts: 1, error: null, message_id: `<${sent.body.id}@${domain}>`, provider_message_id: message!.messageId });
  });

  it("sends a campaign's mail through SES, each recipient once, signed with the platform key", async () => {
    const members = [1, 2, 3].map((n) => `member${n}-${store}@example.org`);
    for (const email of members) expect((await t.call("POST", "/api/v1/subscribers", { key: liveKey, body: { email, tags: ["ses-members"] } })).status).toBe(201);
    const tpl = await t.call("POST", "/api/v1/templates", { key: liveKey, body: { name: "News", subject: "Our news", mjml_content: NEWS_MJML, category: "marketing" } });
    expect(tpl.status).toBe(201);
    const campaign = await t.call("POST", "/api/v1/campaigns", { key: liveKey, body: { name: "Shipping news", template_id: tpl.body.id, tag_filter: { include_tags: ["ses-members"] } } });
    expect(campaign.status).toBe(201);
    expect((await t.call("POST", `/api/v1/campaigns/${campaign.body.id}/send`, { key: liveKey })).status).toBe(200);
    const done = await eventually(
      () => t.call("GET", `/api/v1/campaigns/${campaign.body.id}`, { key: liveKey }),
      (res) => res.body.status === "sent",
    );
    expect(done.body.counts).toMatchObject({ total: 3, sent: 3, failed: 0 });
    for (const member of members) {
      const messages = sentTo(member);
      expect(messages).toHaveLength(1);
      // Campaign mail is bulk mail: one-click unsubscribe, inside what is signed.
      expect(messages[0]!.raw.toString("latin1")).toMatch(/\r\nList-Unsubscribe:\s+<http/);
      const verdict = await dkimVerify(messages[0]!.raw, { resolver: zone });
      expect(verdict.results.map((r) => ({ result: r.status.result, domain: r.signingDomain }))).toEqual([{ result: "pass", domain: "platform-mail.example" }]);
    }
  });

  it("retries while SES cannot be reached, and sends once it can: the email is not failed", async () => {
    const to = `patient-${store}@example.org`;
    await ses.down();
    try {
      const sent = await t.call("POST", "/api/v1/emails/send", { key: liveKey, body: { template_slug: "shipped", to, variables: { order: "R1" } } });
      expect(sent.status).toBe(202);
      const waiting = await eventually(
        () => t.call("GET", `/api/v1/emails/${sent.body.id}`, { key: liveKey }),
        (res) => res.body.attempts >= 2,
      );
      // Still to be sent (`deferred` once refused connections defer mail, issue 17's bounces change).
      expect(["queued", "deferred"]).toContain(waiting.body.status);
      expect(waiting.body).toMatchObject({ error: null, sent_at: null, failed_at: null, provider_message_id: null });
      expect(sentTo(to)).toEqual([]);
      await ses.up();
      const email = await eventually(
        () => t.call("GET", `/api/v1/emails/${sent.body.id}`, { key: liveKey }),
        (res) => res.body.status === "sent",
      );
      // The attempts while it was down, and the one that went through.
      expect(email.body.attempts).toBeGreaterThan(1);
      expect(sentTo(to)).toHaveLength(1);
    } finally {
      await ses.up();
    }
  });
});

describe("Amazon SES provider settings", () => {
  it("refuses to start without SES_REGION or the keys, naming what is missing and no secret", async () => {
    const start = (env: Record<string, string>) => startTestPlatform("ses-settings", { EMAIL_PROVIDER: "ses", ...env });
    await expect(start({ AWS_ACCESS_KEY_ID: "AKIATESTONLY", AWS_SECRET_ACCESS_KEY: "test-only-secret" })).rejects.toThrow(/EMAIL_PROVIDER=ses needs SES_REGION/);
    const refused = start({ SES_REGION: "eu-west-1", AWS_SECRET_ACCESS_KEY: "test-only-secret" });
    await expect(refused).rejects.toThrow(/needs AWS_ACCESS_KEY_ID$/);
    await expect(refused).rejects.toThrow(expect.objectContaining({ message: expect.not.stringContaining("test-only-secret") }));
    await expect(start({ SES_REGION: "eu-west-1", AWS_ACCESS_KEY_ID: "AKIATESTONLY", AWS_SECRET_ACCESS_KEY: "s", SES_ENDPOINT: "ses.local:8005" })).rejects.toThrow(/SES_ENDPOINT must be/);
  });
});
