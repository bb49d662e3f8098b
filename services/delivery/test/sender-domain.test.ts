import { generateKeyPairSync } from "node:crypto";
import { ConfigError } from "@emailsvc/runtime";
import { loadConfig } from "../src/config.js";
import { AppError } from "@emailsvc/errors";
import { checkRecord, checkSenderDomainName, DEFAULT_RECHECK, generateDkimKeys, missingSummary, nextCheckAt, recordsFor, requiredVerified } from "../src/domain/sender-domain.js";
import { feedbackIdFor, senderFor, parseSender } from "../src/domain/message.js";
import { afterCheck } from "../src/usecases/sender-domains.js";
import { relaxedHeader } from "../src/providers/dkim.js";
import type { SenderDomainDoc } from "../src/storage/documents.js";

// The pure rules of sending domains: names, records, what a DNS answer means
// for each record, and the re-check's schedule (its give-up after 72 h cannot
// be waited for in an end-to-end test: embedded/test/sender-domains.test.ts
// runs the rest over the REST API, a real DNS server and a real relay).

const HOUR = 3_600_000;
const SETTINGS = { spfInclude: "_spf.platform.example", returnPathHost: "bounces.platform.example" };

describe("sending domain names", () => {
  it("stores a name lower case, without a trailing dot, an IDN as punycode", () => {
    expect(checkSenderDomainName(" Mail.Example.COM. ", [])).toBe("mail.example.com");
    expect(checkSenderDomainName("bücher.example.com", [])).toBe("xn--bcher-kva.example.com");
    expect(checkSenderDomainName("example.co.uk", [])).toBe("example.co.uk");
  });

  it.each([
    ["", /is required/],
    ["10.0.0.1", /not an IP address/],
    ["[::1]", /not an IP address/],
    ["localhost", /valid host name|public top-level/],
    ["printer.local", /public top-level/],
    ["co.uk", /public suffix/],
    ["github.io", /public suffix/],
    ["example.com:25", /without a port/],
    ["user@example.com", /host name only/],
    ["mail.platform.example", /belongs to this platform/],
  ])("refuses %j", (name, reason) => {
    let error: unknown;
    try {
      checkSenderDomainName(name, ["platform.example"]);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe("invalid_sender_domain");
    expect((error as AppError).message).toMatch(reason);
  });
});

describe("the records of a domain and what the DNS answers mean", () => {
  let keys: Awaited<ReturnType<typeof generateDkimKeys>>;
  let records: ReturnType<typeof recordsFor>;
  const byPurpose = (purpose: string) => records.find((r) => r.purpose === purpose)!;
  beforeAll(async () => {
    keys = await generateDkimKeys();
    records = recordsFor("example.com", keys, SETTINGS);
  });

  it("names a selector per key, side by side for two tenants of one domain", async () => {
    expect(keys.rsa.selector).not.toBe(keys.ed25519.selector);
    expect((await generateDkimKeys()).rsa.selector).not.toBe(keys.rsa.selector);
    expect(byPurpose("dkim").name).toBe(`${keys.rsa.selector}._domainkey.example.com`);
    expect(records.filter((r) => r.required).map((r) => r.purpose)).toEqual(["dkim", "spf"]);
  });

  it("reads a DKIM key split into strings or folded with spaces as the same key", () => {
    const value = byPurpose("dkim").value;
    expect(checkRecord(byPurpose("dkim"), [value.replace("p=", "p= ").replace(/(.{100})/, "$1 ")]).state).toBe("verified");
    expect(checkRecord(byPurpose("dkim"), ["v=DKIM1; k=rsa; p=AAAA"])).toEqual({ state: "mismatch", found: ["v=DKIM1; k=rsa; p=AAAA"] });
    expect(checkRecord(byPurpose("dkim"), ["google-site-verification=x"])).toEqual({ state: "missing", found: [] });
    expect(checkRecord(byPurpose("dkim_ed25519"), [byPurpose("dkim_ed25519").value]).state).toBe("verified");
    // The Ed25519 key under k=rsa is not the record asked for.
    expect(checkRecord(byPurpose("dkim_ed25519"), [byPurpose("dkim_ed25519").value.replace("k=ed25519", "k=rsa")]).state).toBe("mismatch");
  });

  it("takes an SPF record that includes the platform among other terms, and only one SPF record", () => {
    const spf = byPurpose("spf");
    expect(checkRecord(spf, ["v=spf1 ip4:192.0.2.0/24 include:_spf.platform.example include:_spf.google.com -all"]).state).toBe("verified");
    expect(checkRecord(spf, ["v=spf1 include:_spf.google.com ~all"]).state).toBe("mismatch");
    // Two SPF records are a permerror for receivers (RFC 7208 4.5): not verified.
    expect(checkRecord(spf, [spf.value, "v=spf1 -all"]).state).toBe("mismatch");
    expect(checkRecord(spf, ["some other text"])).toEqual({ state: "missing", found: [] });
  });

  it("takes any DMARC policy, and the return path's CNAME only to the platform's host", () => {
    expect(checkRecord(byPurpose("dmarc"), ["v=DMARC1; p=reject; rua=mailto:d@example.com"]).state).toBe("verified");
    expect(checkRecord(byPurpose("return_path"), ["Bounces.Platform.Example."]).state).toBe("verified");
    expect(checkRecord(byPurpose("return_path"), ["elsewhere.example"]).state).toBe("mismatch");
  });

  it("says what is missing of the required records", () => {
    const checked = records.map((r) => ({ ...r, state: r.purpose === "spf" ? ("verified" as const) : ("missing" as const) }));
    expect(requiredVerified(checked)).toBe(false);
    expect(missingSummary(checked)).toBe(`DKIM record at ${byPurpose("dkim").name} is missing`);
  });
});

describe("the re-check's schedule", () => {
  it("looks again after a minute, doubling up to 6 hours, and gives up 72 hours after the domain started pending", () => {
    const start = 1_000_000;
    const delays = [0, 1, 2, 3, 8, 9, 20].map((checks) => nextCheckAt(DEFAULT_RECHECK, { checks, pendingSince: start, now: start })! - start);
    expect(delays).toEqual([60_000, 120_000, 240_000, 480_000, 256 * 60_000, 6 * HOUR, 6 * HOUR]);
    // The last check falls at the give-up time, not after it; then no more.
    expect(nextCheckAt(DEFAULT_RECHECK, { checks: 20, pendingSince: start, now: start + 70 * HOUR })).toBe(start + 72 * HOUR);
    expect(nextCheckAt(DEFAULT_RECHECK, { checks: 21, pendingSince: start, now: start + 72 * HOUR })).toBeNull();
  });

  let keys: Awaited<ReturnType<typeof generateDkimKeys>>;
  beforeAll(async () => {
    keys = await generateDkimKeys();
  });
  const pending = (over: Partial<SenderDomainDoc> = {}): SenderDomainDoc => {
    return {
      _id: "sdm_x",
      tenant: "acc:live",
      name: "example.com",
      status: "pending",
      records: recordsFor("example.com", keys, SETTINGS),
      rsa: { selector: keys.rsa.selector, public_key: keys.rsa.publicKey, private_key_sealed: "s1.x" },
      ed25519: { selector: keys.ed25519.selector, public_key: keys.ed25519.publicKey, private_key_sealed: "s1.y" },
      failure_reason: "",
      created_at: 0,
      pending_since: 0,
      checks: 3,
      verified_at: null,
      last_checked_at: null,
      next_check_at: 1,
      ...over,
    };
  };

  it("fails a domain still missing its records at the give-up time, with what is missing", () => {
    const doc = pending();
    const missing = doc.records.map((r) => ({ ...r, state: "missing" as const }));
    const outcome = afterCheck(doc, missing, 72 * HOUR, DEFAULT_RECHECK, false);
    expect(outcome).toMatchObject({ status: "failed", next_check_at: null });
    expect(outcome.failure_reason).toMatch(/^not verified after 72 h: DKIM record at .* is missing; SPF record at example.com is missing/);
  });

  it("verifies a domain whose required records are seen, and restarts a failed one checked by hand", () => {
    const doc = pending();
    const seen = doc.records.map((r) => ({ ...r, state: r.required ? ("verified" as const) : ("missing" as const) }));
    expect(afterCheck(doc, seen, 5, DEFAULT_RECHECK, false)).toMatchObject({ status: "verified", verified_at: 5, next_check_at: 5 + 24 * HOUR, failure_reason: "", failing_since: null });
    const failed = pending({ status: "failed", next_check_at: null, pending_since: 0, checks: 30 });
    const missing = doc.records.map((r) => ({ ...r, state: "missing" as const }));
    expect(afterCheck(failed, missing, 100 * HOUR, DEFAULT_RECHECK, true)).toMatchObject({ status: "pending", pending_since: 100 * HOUR, checks: 0, next_check_at: 100 * HOUR + 60_000 });
  });

  // A verified domain whose records went missing.
  const verified = (over: Partial<SenderDomainDoc> = {}) => pending({ status: "verified", verified_at: 1, checks: 0, next_check_at: 10 * HOUR, ...over });

  it("keeps sending, signed, for 72 h, saying what is missing since when and looking hourly; back in time, it is as before", () => {
    const doc = verified();
    const missing = doc.records.map((r) => ({ ...r, state: (r.purpose === "spf" ? "missing" : "verified") as "missing" | "verified" }));
    const first = afterCheck(doc, missing, 10 * HOUR, DEFAULT_RECHECK, false);
    expect(first).toMatchObject({ status: "verified", verified_at: 1, failing_since: 10 * HOUR, next_check_at: 11 * HOUR });
    expect(first.failure_reason).toMatch(/^since 1970-01-01T10:00:00\.000Z: SPF record at example\.com is missing; mail is still sent and signed until 1970-01-04T10:00:00\.000Z/);
    const later = afterCheck({ ...doc, ...first }, missing, 40 * HOUR, DEFAULT_RECHECK, false);
    expect(later).toMatchObject({ status: "verified", failing_since: 10 * HOUR, next_check_at: 41 * HOUR });
    const seen = doc.records.map((r) => ({ ...r, state: "verified" as const }));
    expect(afterCheck({ ...doc, ...later }, seen, 41 * HOUR, DEFAULT_RECHECK, false)).toMatchObject({ status: "verified", verified_at: 1, failing_since: null, failure_reason: "", next_check_at: 65 * HOUR });
  });

  it("fails once they stay missing for 72 h (a check by hand the same), and a check by hand then starts over", () => {
    const doc = verified({ failing_since: 10 * HOUR });
    const missing = doc.records.map((r) => ({ ...r, state: "missing" as const }));
    for (const byHand of [false, true]) {
      const outcome = afterCheck(doc, missing, 82 * HOUR, DEFAULT_RECHECK, byHand);
      expect(outcome).toMatchObject({ status: "failed", verified_at: null, next_check_at: null, failing_since: null });
      expect(outcome.failure_reason).toMatch(/^missing for 72 h after it was verified: DKIM record/);
    }
    const failed = { ...doc, ...afterCheck(doc, missing, 82 * HOUR, DEFAULT_RECHECK, false) };
    expect(afterCheck(failed, missing, 83 * HOUR, DEFAULT_RECHECK, true)).toMatchObject({ status: "pending", pending_since: 83 * HOUR, next_check_at: 83 * HOUR + 60_000 });
  });
});

describe("From and Feedback-ID", () => {
  const platform = parseSender("Platform <no-reply@platform.example>");

  it("uses the email's own From, else EMAIL_FROM, and quotes a display name that needs it", () => {
    expect(senderFor({}, platform)).toBe(platform);
    expect(senderFor({ from_email: "orders@example.com" }, platform)).toMatchObject({ address: "orders@example.com", domain: "example.com", header: "orders@example.com" });
    expect(senderFor({ from_email: "orders@Example.com", from_name: "Acme, Inc." }, platform)).toMatchObject({ domain: "example.com", header: '"Acme, Inc." <orders@Example.com>' });
    expect(senderFor({ from_name: "Support" }, platform)).toMatchObject({ address: "no-reply@platform.example", header: "Support <no-reply@platform.example>" });
  });

  it("names the campaign or the stream, the account and the platform", () => {
    expect(feedbackIdFor({ campaignId: "cmp_1", category: "marketing", tenant: "acc_9:live", platformTag: "emailsvc" })).toBe("cmp_1:acc_9:emailsvc");
    expect(feedbackIdFor({ category: "transactional", tenant: "acc_9:live", platformTag: "emailsvc" })).toBe("transactional:acc_9:emailsvc");
  });
});

describe("relaxed header canonicalisation (RFC 6376 3.4.2), for the Ed25519 signature", () => {
  it("lower-cases the name, unfolds, compresses whitespace and trims around the colon and at the end", () => {
    expect(relaxedHeader("Subject :  Order\r\n \t 42   shipped  ")).toBe("subject:Order 42 shipped");
    expect(relaxedHeader("DKIM-Signature: v=1; a=ed25519-sha256;\r\n h=from:to; b=")).toBe("dkim-signature:v=1; a=ed25519-sha256; h=from:to; b=");
  });
});

describe("the platform's DKIM key (DKIM_PLATFORM_SELECTOR, DKIM_PLATFORM_KEY)", () => {
  const pem = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ type: "pkcs8", format: "pem" }).toString();

  it("is off by default, and read with its selector; `\\n` may stand for the PEM's line breaks", () => {
    expect(loadConfig({}).platformDkim).toBeUndefined();
    const config = loadConfig({ DKIM_PLATFORM_SELECTOR: "s2026", DKIM_PLATFORM_KEY: pem.replace(/\n/g, "\\n") });
    expect(config.platformDkim).toMatchObject({ selector: "s2026" });
    expect(config.platformDkim!.privateKey.asymmetricKeyType).toBe("rsa");
  });

  it("stops the start, never showing the key, when half set, not a key, or not RSA", () => {
    expect(() => loadConfig({ DKIM_PLATFORM_SELECTOR: "s2026" })).toThrow(ConfigError);
    expect(() => loadConfig({ DKIM_PLATFORM_KEY: pem })).toThrow(/go together/);
    expect(() => loadConfig({ DKIM_PLATFORM_SELECTOR: "s2026", DKIM_PLATFORM_KEY: "-----BEGIN PRIVATE KEY-----\nc2VjcmV0\n-----END PRIVATE KEY-----" })).toThrow(/is not a private key in PEM \(-----BEGIN PRIVATE KEY-----…\)$/);
    const ed = generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }).toString();
    expect(() => loadConfig({ DKIM_PLATFORM_SELECTOR: "s2026", DKIM_PLATFORM_KEY: ed })).toThrow(/must be an RSA key/);
    expect(() => loadConfig({ DKIM_PLATFORM_SELECTOR: "bad selector", DKIM_PLATFORM_KEY: pem })).toThrow(/DNS label/);
  });
});
