import { generateKeyPairSync } from "node:crypto";
import { SmtpSink, startTestDnsServer, type TestDnsServer } from "@emailsvc/testing";
import { GENEROUS_RATE_LIMIT_ENV } from "../../services/gateway/test/support/harness";
import { eventually, storedDocs, startTestPlatform, type TestPlatform } from "./support/platform-client";
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { dkimVerify } = require("mailauth/lib/dkim/verify") as {
  dkimVerify(message: Buffer, options: { resolver: (name: string, type: string) => Promise<string[][]> }): Promise<{
    results: Array<{ signingDomain: string; selector: string; algo: string; status: { result: string; comment?: string } }>;
  }>;
};

// Sending domains end to end, as an integrator does it: add a domain through
// the REST API, publish its records in a DNS zone (a real DNS server the
// delivery service's production resolver asks, SENDER_DOMAIN_DNS_SERVERS),
// verify it, send live mail From it over a real SMTP relay (SmtpSink), and
// check the message that arrived with an independent DKIM verifier
// (mailauth's dkimVerify, asking the same zone).

const MJML = "<mjml><mj-body><mj-section><mj-column><mj-text>Your order {{order}} has shipped.</mj-text></mj-column></mj-section></mj-body></mjml>";
const SPF_INCLUDE = "_spf.platform-mail.example";
// The operator's own DKIM key for mail From EMAIL_FROM (DKIM_PLATFORM_SELECTOR, DKIM_PLATFORM_KEY).
const PLATFORM_KEY = generateKeyPairSync("rsa", { modulusLength: 2048 });
const RETURN_PATH_HOST = "bounces.platform-mail.example";

describe.each(["embedded", "mongodb"] as const)("sending domains, DKIM and From (%s)", (store) => {
  let t: TestPlatform;
  let sink: SmtpSink;
  let dns: TestDnsServer;
  let liveKey: string;
  const domain = `mail-${store}.example.com`;

  beforeAll(async () => {
    sink = await new SmtpSink().start();
    dns = await startTestDnsServer();
    // The operator published the platform key's record beside its own domain's.
    dns.txts.set("platform2026._domainkey.platform-mail.example", [`v=DKIM1; k=rsa; p=${PLATFORM_KEY.publicKey.export({ type: "spki", format: "der" }).toString("base64")}`]);
    t = await startTestPlatform(
      `sender-domains-${store}`,
      {
        ...GENEROUS_RATE_LIMIT_ENV,
        EMAIL_PROVIDER: "smtp",
        SMTP_URL: sink.url(),
        EMAIL_FROM: "Platform <no-reply@platform-mail.example>",
        SENDER_DOMAIN_DNS_SERVERS: dns.address,
        SPF_INCLUDE,
        RETURN_PATH_HOST,
        SENDER_DOMAIN_FIRST_RECHECK_MS: "1000",
        DKIM_PLATFORM_SELECTOR: "platform2026",
        DKIM_PLATFORM_KEY: PLATFORM_KEY.privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
      },
      { mongo: store === "mongodb" },
    );
    liveKey = (await t.call("POST", `/admin/v1/accounts/${t.accountId}/api-keys`, { admin: true, body: { mode: "live" } })).body.key;
    for (const key of [liveKey, t.key]) {
      const tpl = await t.call("POST", "/api/v1/templates", { key, body: { name: "Shipped", slug: "shipped", subject: "Order {{order}} shipped", mjml_content: MJML, category: "transactional" } });
      expect(tpl.status).toBe(201);
    }
    // A template with its own sender, on the domain the tests add (not verified yet).
    const branded = await t.call("POST", "/api/v1/templates", {
      key: liveKey,
      body: { name: "Branded", slug: "branded", subject: "Order {{order}}", mjml_content: MJML, category: "transactional", from_email: `news@${domain}`, from_name: "Acme News", reply_to: "news-replies@example.org" },
    });
    expect(branded.status).toBe(201);
    expect(branded.body).toMatchObject({ from_email: `news@${domain}`, from_name: "Acme News", reply_to: "news-replies@example.org", version: 1 });
  }, 60_000);

  afterAll(async () => {
    await t?.close();
    await sink?.close();
    await dns?.close();
  });

  /** Publishes the records a domain's answer names, as a customer would at their DNS provider. */
  function publish(records: Array<{ type: string; name: string; value: string }>, only?: string[]): void {
    for (const record of records) {
      if (only && !only.includes(record.name)) continue;
      if (record.type === "CNAME") dns.cnames.set(record.name, record.value);
      else dns.txts.set(record.name, [...(dns.txts.get(record.name) ?? []), record.value]);
    }
  }

  /** The published zone, as mailauth's verifier asks it: the receiving side's view of the records. */
  const zone = async (name: string, type: string): Promise<string[][]> => {
    const texts = type === "TXT" ? dns.txts.get(name.toLowerCase()) : undefined;
    if (!texts) throw Object.assign(new Error("not found"), { code: "ENOTFOUND" });
    return texts.map((text) => [text]);
  };

  const record = (body: { records: Array<Record<string, unknown>> }, purpose: string) => body.records.find((r) => r.purpose === purpose)! as { type: string; name: string; value: string; status: string; found: string[]; required: boolean };

  let domainId: string;
  let records: Array<{ purpose: string; type: string; name: string; value: string }>;

  it("adds a domain with its keys and answers the records to publish", async () => {
    const res = await t.call("POST", "/api/v1/domains", { key: liveKey, body: { name: ` ${domain.toUpperCase()}. ` } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ name: domain, status: "pending", verified_at: null, last_checked_at: null });
    domainId = res.body.id;
    records = res.body.records;
    expect(records.map((r) => r.purpose)).toEqual(["dkim", "dkim_ed25519", "spf", "dmarc", "return_path"]);
    const dkim = record(res.body, "dkim");
    expect(dkim).toMatchObject({ type: "TXT", required: true, status: "not_checked", found: [] });
    expect(dkim.name).toMatch(new RegExp(`^es[0-9a-f]{10}r\\._domainkey\\.${domain.replace(/\./g, "\\.")}$`));
    // An RSA 2048 SubjectPublicKeyInfo is 294 bytes: 392 characters of base64.
    expect(dkim.value).toMatch(/^v=DKIM1; k=rsa; p=[A-Za-z0-9+/]{392}$/);
    expect(record(res.body, "dkim_ed25519")).toMatchObject({ type: "TXT", required: false });
    expect(record(res.body, "dkim_ed25519").value).toMatch(/^v=DKIM1; k=ed25519; p=[A-Za-z0-9+/]{43}=$/);
    expect(record(res.body, "spf")).toMatchObject({ type: "TXT", name: domain, value: `v=spf1 include:${SPF_INCLUDE} ~all`, required: true });
    expect(record(res.body, "dmarc")).toMatchObject({ type: "TXT", name: `_dmarc.${domain}`, value: "v=DMARC1; p=none", required: false });
    expect(record(res.body, "return_path")).toMatchObject({ type: "CNAME", name: `bounces.${domain}`, value: RETURN_PATH_HOST, required: false });
    expect(JSON.stringify(res.body)).not.toMatch(/PRIVATE KEY|private_key/i);

    // Kept sealed: no private key in the clear in the service's store.
    const stored = (await storedDocs(t, "delivery", "sender_domains")).find((d) => d._id === domainId)!;
    expect(JSON.stringify(stored)).not.toMatch(/BEGIN PRIVATE KEY/);
    expect((stored.rsa as { private_key_sealed: string }).private_key_sealed).toMatch(/^s1\./);

    expect((await t.call("GET", `/api/v1/domains/${domainId}`, { key: liveKey })).body).toMatchObject({ id: domainId, name: domain });
    // Per account and mode: the test key does not see it.
    expect((await t.call("GET", `/api/v1/domains/${domainId}`)).status).toBe(404);
  });

  it("refuses bad names and duplicates, and stores nothing for them", async () => {
    for (const name of ["192.0.2.1", "localhost", "co.uk", "mail.example.internal", "https://example.com/x", "*.example.com", "platform-mail.example"]) {
      const res = await t.call("POST", "/api/v1/domains", { key: liveKey, body: { name } });
      expect({ name, status: res.status, code: res.body.code }).toEqual({ name, status: 400, code: "invalid_sender_domain" });
      expect(res.body.errors[0].field).toBe("name");
    }
    const again = await t.call("POST", "/api/v1/domains", { key: liveKey, body: { name: domain } });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ code: "sender_domain_exists", existing_id: domainId });
    expect((await t.call("POST", "/api/v1/domains", { key: liveKey, body: { name: domain, selector: "x" } })).status).toBe(400);
    const list = await t.call("GET", "/api/v1/domains?limit=500", { key: liveKey });
    expect(list.body.items.map((d: { name: string }) => d.name)).toEqual([domain]);
  });

  it("refuses a live send From a domain not verified (422, nothing stored); test mode may use any From", async () => {
    const before = (await t.call("GET", "/api/v1/emails?limit=500", { key: liveKey })).body.items.length;
    const refused = await t.call("POST", "/api/v1/emails/send", {
      key: liveKey,
      body: { template_slug: "shipped", to: "buyer@example.org", from: { email: `orders@${domain}` }, variables: { order: "A1" } },
    });
    expect(refused.status).toBe(422);
    expect(refused.body.code).toBe("from_domain_not_verified");
    expect(refused.body.detail).toContain(domain);
    // A template's From is held to the same rule.
    const byTemplate = await t.call("POST", "/api/v1/emails/send", { key: liveKey, body: { template_slug: "branded", to: "buyer@example.org", variables: { order: "A1" } } });
    expect(byTemplate.status).toBe(422);
    expect(byTemplate.body.code).toBe("from_domain_not_verified");
    expect((await t.call("GET", "/api/v1/emails?limit=500", { key: liveKey })).body.items.length).toBe(before);

    const sandboxed = await t.call("POST", "/api/v1/emails/send", {
      body: { template_slug: "shipped", to: "buyer@example.org", from: { email: "anyone@not-verified.example.net", name: "Tester" }, variables: { order: "T1" } },
    });
    expect(sandboxed.status).toBe(202);
    const kept = await eventually(
      () => t.call("GET", `/api/v1/emails/${sandboxed.body.id}/sandbox`),
      (res) => res.status === 200,
    );
    expect(kept.body.from).toBe("Tester <anyone@not-verified.example.net>");
    expect(kept.body.headers["Feedback-ID"]).toBe(`transactional:${t.accountId}:emailsvc`);
  });

  it("answers per record what the DNS holds: a wrong DKIM key is a mismatch, the domain stays pending", async () => {
    const other = generateKeyPairSync("rsa", { modulusLength: 2048 }).publicKey.export({ type: "spki", format: "der" }).toString("base64");
    const dkim = records.find((r) => r.purpose === "dkim")!;
    dns.txts.set(dkim.name, [`v=DKIM1; k=rsa; p=${other}`]);
    publish(records, [domain]); // SPF only
    const res = await t.call("POST", `/api/v1/domains/${domainId}/verify`, { key: liveKey });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe("pending");
    expect(record(res.body, "dkim")).toMatchObject({ status: "mismatch", found: [`v=DKIM1; k=rsa; p=${other}`] });
    expect(record(res.body, "spf")).toMatchObject({ status: "verified", found: [`v=spf1 include:${SPF_INCLUDE} ~all`] });
    expect(record(res.body, "dmarc")).toMatchObject({ status: "missing", found: [] });
    expect(record(res.body, "return_path")).toMatchObject({ status: "missing", found: [] });
    expect(res.body.failure_reason).toContain("DKIM record");
    expect(res.body.next_check_at).not.toBeNull();
  });

  it("verifies the domain by itself once the records are published (the background re-check)", async () => {
    dns.txts.delete(records.find((r) => r.purpose === "dkim")!.name);
    publish(records.filter((r) => r.name !== domain));
    const verified = await eventually(
      () => t.call("GET", `/api/v1/domains/${domainId}`, { key: liveKey }),
      (res) => res.body.status === "verified",
    );
    // Looked up again daily: a record removed later shows.
    expect(verified.body).toMatchObject({ failure_reason: null, next_check_at: expect.any(String), verified_at: expect.any(String) });
    expect(Date.parse(verified.body.next_check_at) - Date.parse(verified.body.last_checked_at)).toBe(24 * 3_600_000);
    expect(verified.body.records.map((r: { status: string }) => r.status)).toEqual(["verified", "verified", "verified", "verified", "verified"]);
    // A check by hand answers the same.
    const checked = await t.call("POST", `/api/v1/domains/${domainId}/verify`, { key: liveKey });
    expect(checked.body.status).toBe("verified");

    // A required record removed after verification: still verified (mail goes on, signed) for 72 h, saying what is missing
    // since when; back, as before.
    const spf = dns.txts.get(domain)!;
    dns.txts.delete(domain);
    const missing = await t.call("POST", `/api/v1/domains/${domainId}/verify`, { key: liveKey });
    expect(missing.body).toMatchObject({ status: "verified", verified_at: verified.body.verified_at });
    expect(record(missing.body, "spf")).toMatchObject({ status: "missing" });
    expect(missing.body.failure_reason).toMatch(/^since .*: SPF record at .* is missing; mail is still sent and signed until .*, then the domain fails unless the records are back$/);
    expect(Date.parse(missing.body.next_check_at) - Date.parse(missing.body.last_checked_at)).toBe(3_600_000);
    dns.txts.set(domain, spf);
    const back = await t.call("POST", `/api/v1/domains/${domainId}/verify`, { key: liveKey });
    expect(back.body).toMatchObject({ status: "verified", failure_reason: null });
  });

  it("sends live mail From the verified domain, DKIM-signed so that an independent verifier passes it, with Feedback-ID and Reply-To", async () => {
    const sent = await t.call("POST", "/api/v1/emails/send", {
      key: liveKey,
      body: {
        template_slug: "shipped",
        to: `buyer-${store}@example.org`,
        from: { email: `orders@${domain}`, name: "Acme Orders" },
        reply_to: "support@example.org",
        variables: { order: "A2" },
      },
    });
    expect(sent.status).toBe(202);
    const arrived = await eventually(
      async () => sink.to(`buyer-${store}@example.org`),
      (messages) => messages.length > 0,
    );
    const message = arrived[0]!;
    expect(message.parsed.from?.value).toEqual([{ address: `orders@${domain}`, name: "Acme Orders" }]);
    expect(message.parsed.replyTo?.value).toEqual([{ address: "support@example.org", name: "" }]);
    expect(message.parsed.headers.get("feedback-id")).toBe(`transactional:${t.accountId}:emailsvc`);
    expect(message.parsed.messageId).toBe(`<${sent.body.id}@${domain}>`);

    const verdict = await dkimVerify(Buffer.from(message.raw), { resolver: zone });
    const passed = verdict.results.filter((r) => r.status.result === "pass");
    // Both signatures pass, each with its own key: RSA (RFC 6376) and Ed25519 (RFC 8463).
    expect(verdict.results).toHaveLength(2);
    expect(passed.map((r) => ({ domain: r.signingDomain, selector: r.selector, algo: r.algo })).sort((a, b) => a.algo.localeCompare(b.algo))).toEqual([
      { domain, selector: records.find((r) => r.purpose === "dkim_ed25519")!.name.split(".")[0], algo: "ed25519-sha256" },
      { domain, selector: records.find((r) => r.purpose === "dkim")!.name.split(".")[0], algo: "rsa-sha256" },
    ]);
    // The verifier is no rubber stamp: a changed Subject fails both signatures.
    const tampered = await dkimVerify(Buffer.from(message.raw.replace(/^Subject: .*$/m, "Subject: Order A2 cancelled")), { resolver: zone });
    expect(tampered.results.map((r) => r.status.result)).toEqual(["fail", "fail"]);
    // The signature as it stands in the message's header, unfolded.
    const headerBlock = message.raw.slice(0, message.raw.indexOf("\r\n\r\n")).replace(/\r\n[ \t]+/g, " ");
    const signature = headerBlock.split("\r\n").find((line) => /^dkim-signature:.*a=rsa-sha256/i.test(line))!;
    expect(signature).toMatch(/c=relaxed\/relaxed/);
    const signed = /[;\s]h=([^;]+);/.exec(signature)![1]!.replace(/\s+/g, "").toLowerCase().split(":");
    expect(signed).toEqual(expect.arrayContaining(["from", "to", "subject", "date", "message-id", "mime-version", "content-type", "reply-to", "feedback-id"]));
  });

  it("sends with the template's From and Reply-To, signed; a change of the sender is a new version", async () => {
    const sent = await t.call("POST", "/api/v1/emails/send", { key: liveKey, body: { template_slug: "branded", to: `reader-${store}@example.org`, variables: { order: "B1" } } });
    expect(sent.status).toBe(202);
    const [message] = await eventually(
      async () => sink.to(`reader-${store}@example.org`),
      (messages) => messages.length > 0,
    );
    expect(message!.parsed.from?.value).toEqual([{ address: `news@${domain}`, name: "Acme News" }]);
    expect(message!.parsed.replyTo?.value).toEqual([{ address: "news-replies@example.org", name: "" }]);
    const verdict = await dkimVerify(Buffer.from(message!.raw), { resolver: zone });
    expect(verdict.results.map((r) => r.status.result)).toEqual(["pass", "pass"]);

    const templateId = (await t.call("GET", "/api/v1/templates?limit=500", { key: liveKey })).body.items.find((x: { slug: string }) => x.slug === "branded").id;
    const updated = await t.call("PATCH", `/api/v1/templates/${templateId}`, { key: liveKey, body: { reply_to: null, from_name: "Acme Letters" } });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({ version: 2, from_email: `news@${domain}`, from_name: "Acme Letters", reply_to: null });
  });

  it("fails a campaign's mail whose template From is on no verified domain, with the reason", async () => {
    const tpl = await t.call("POST", "/api/v1/templates", {
      key: liveKey,
      body: { name: "Elsewhere", subject: "News", mjml_content: MJML, category: "marketing", from_email: "news@unverified-elsewhere.example.com" },
    });
    expect(tpl.status).toBe(201);
    expect((await t.call("POST", "/api/v1/subscribers", { key: liveKey, body: { email: `member-${store}@example.org`, tags: ["members"] } })).status).toBe(201);
    const campaign = await t.call("POST", "/api/v1/campaigns", { key: liveKey, body: { name: "Elsewhere", template_id: tpl.body.id, tag_filter: { include_tags: ["members"] } } });
    expect(campaign.status).toBe(201);
    expect((await t.call("POST", `/api/v1/campaigns/${campaign.body.id}/send`, { key: liveKey })).status).toBe(200);
    const done = await eventually(
      () => t.call("GET", `/api/v1/campaigns/${campaign.body.id}`, { key: liveKey }),
      (res) => res.body.status === "sent",
    );
    expect(done.body.counts).toMatchObject({ total: 1, sent: 0, failed: 1 });
    const emails = (await t.call("GET", "/api/v1/emails?limit=500", { key: liveKey })).body.items as Array<{ to: string; status: string; error: string }>;
    expect(emails.find((e) => e.to === `member-${store}@example.org`)).toMatchObject({ status: "failed", error: "from_domain_not_verified" });
    expect(sink.to(`member-${store}@example.org`)).toEqual([]);
  });

  it("records a trigger's fire failed, for good, when its template's From is on no verified domain", async () => {
    const tpl = await t.call("POST", "/api/v1/templates", {
      key: liveKey,
      body: { name: "Welcome elsewhere", subject: "Welcome", mjml_content: MJML, category: "transactional", from_email: "hello@unverified-elsewhere.example.com" },
    });
    expect(tpl.status).toBe(201);
    const trigger = await t.call("POST", "/api/v1/triggers", { key: liveKey, body: { event_type: "subscriber.created", template_id: tpl.body.id } });
    expect(trigger.status).toBe(201);
    expect((await t.call("POST", "/api/v1/subscribers", { key: liveKey, body: { email: `newcomer-${store}@example.org` } })).status).toBe(201);
    const fires = await eventually(
      async () => (await storedDocs(t, "campaigns", "trigger_fires")).filter((f) => f.trigger_id === trigger.body.id),
      (docs) => docs.length === 1 && docs[0]!.state !== "pending",
    );
    expect(fires[0]).toMatchObject({ state: "failed", reason: "from_domain_not_verified", email_id: "" });
    expect(sink.to(`newcomer-${store}@example.org`)).toEqual([]);
  });

  it("signs mail From EMAIL_FROM with the operator's platform key", async () => {
    const sent = await t.call("POST", "/api/v1/emails/send", { key: liveKey, body: { template_slug: "shipped", to: `plain-${store}@example.org`, variables: { order: "C1" } } });
    expect(sent.status).toBe(202);
    const [message] = await eventually(
      async () => sink.to(`plain-${store}@example.org`),
      (messages) => messages.length > 0,
    );
    expect(message!.parsed.from?.value).toEqual([{ address: "no-reply@platform-mail.example", name: "Platform" }]);
    const verdict = await dkimVerify(Buffer.from(message!.raw), { resolver: zone });
    expect(verdict.results.map((r) => ({ result: r.status.result, domain: r.signingDomain, selector: r.selector }))).toEqual([
      { result: "pass", domain: "platform-mail.example", selector: "platform2026" },
    ]);
  });

  it("deletes a domain: live mail From it is refused again", async () => {
    expect((await t.call("DELETE", `/api/v1/domains/${domainId}`, { key: liveKey })).status).toBe(204);
    expect((await t.call("GET", `/api/v1/domains/${domainId}`, { key: liveKey })).status).toBe(404);
    expect((await t.call("DELETE", `/api/v1/domains/${domainId}`, { key: liveKey })).status).toBe(404);
    const refused = await t.call("POST", "/api/v1/emails/send", {
      key: liveKey,
      body: { template_slug: "shipped", to: "buyer@example.org", from: { email: `orders@${domain}` }, variables: { order: "A3" } },
    });
    expect(refused.status).toBe(422);
  });
});
