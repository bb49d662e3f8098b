import { checkCustomDomain, hostOf } from "../src/domain/custom-domain";
import {
  afterCertificateCheck,
  afterDnsCheck,
  backoff,
  certificateVerdict,
  DEFAULT_TIMING,
  dnsVerdict,
  initialProgress,
  issued,
  queued,
  retry,
  type Timing,
} from "../src/domain/domain-states";
import { hostName } from "../src/page/server";

// Pure logic of custom domains: which hosts are accepted, and how a domain
// moves through its states with a clock and observations given by the test.

const OURS = ["api.mail.example.net", "preferences.mail.example.net", "domains.mail.example.net"];

describe("checkCustomDomain", () => {
  const ok = (input: string) => {
    const r = checkCustomDomain(input, OURS);
    if (!r.ok) throw new Error(`refused ${input}: ${r.reason}`);
    return r.domain;
  };
  const refused = (input: string) => {
    const r = checkCustomDomain(input, OURS);
    if (r.ok) throw new Error(`accepted ${input}`);
    return r.reason;
  };

  it("normalises case, a trailing dot, spaces around and IDN (to punycode)", () => {
    expect(ok("Preferences.Example.COM")).toBe("preferences.example.com");
    expect(ok("news.example.com.")).toBe("news.example.com");
    expect(ok("  news.example.com ")).toBe("news.example.com");
    expect(ok("abo.bücher.ch")).toBe("abo.xn--bcher-kva.ch");
    expect(ok("a.b.example.co.uk")).toBe("a.b.example.co.uk");
  });

  it("refuses apex domains by the Public Suffix List", () => {
    expect(refused("example.com")).toMatch(/apex domain; use a subdomain such as preferences\.example\.com/);
    expect(refused("example.co.uk")).toMatch(/apex/);
    expect(refused("bücher.ch")).toMatch(/apex/);
    // github.io is a public suffix (private section): myshop.github.io is someone's apex.
    expect(refused("myshop.github.io")).toMatch(/apex/);
    expect(refused("co.uk")).toMatch(/public suffix/);
  });

  it("refuses IP addresses, wildcards, URLs and ports", () => {
    expect(refused("192.0.2.10")).toMatch(/IP address/);
    expect(refused("[2001:db8::1]")).toMatch(/IP address/);
    expect(refused("2001:db8::1")).toMatch(/IP address/);
    expect(refused("*.example.com")).toMatch(/wildcards/);
    expect(refused("https://news.example.com/x")).toMatch(/host name only/);
    expect(refused("news.example.com:8443")).toMatch(/port/);
    expect(refused("")).toMatch(/required/);
  });

  it("refuses invalid host names and unknown top-level domains", () => {
    expect(refused("news_letter.example.com")).toMatch(/not a valid host name/);
    expect(refused("-news.example.com")).toMatch(/not a valid host name/);
    expect(refused(`${"a".repeat(64)}.example.com`)).toMatch(/not a valid host name/);
    expect(refused("news.example.invalidtld")).toMatch(/public top-level domain/);
    expect(refused("localhost")).toMatch(/not a valid host name|top-level/);
    expect(refused(`${"a.".repeat(127)}example.com`)).toMatch(/at most 253/);
  });

  it("refuses the platform's own hosts and their subdomains", () => {
    expect(refused("preferences.mail.example.net")).toMatch(/belongs to this platform/);
    expect(refused("shop.domains.mail.example.net")).toMatch(/belongs to this platform \(domains\.mail\.example\.net\)/);
    expect(ok("mail.example.net.other.com")).toBe("mail.example.net.other.com");
  });

  it("reads hosts of URL settings and Host headers", () => {
    expect(hostOf("https://Preferences.Example.com:8443/x")).toBe("preferences.example.com");
    expect(hostOf("domains.example.net")).toBe("domains.example.net");
    expect(hostOf(undefined)).toBeUndefined();
    expect(hostName("News.Example.com:443")).toBe("news.example.com");
    expect(hostName("news.example.com.")).toBe("news.example.com");
    expect(hostName("[::1]:8081")).toBe("::1");
    expect(hostName("bad host")).toBe("");
    expect(hostName(undefined)).toBe("");
  });
});

describe("the states of a custom domain", () => {
  const t: Timing = { ...DEFAULT_TIMING, recheckBaseMs: 1000, dnsMaxIntervalMs: 8000, statusMaxIntervalMs: 4000, dnsTimeoutMs: 60_000, issueTimeoutMs: 30_000, retryBaseMs: 10_000, maxIssuanceAttempts: 2 };
  const target = "domains.mail.example.net";
  const domain = "news.example.com";

  it("explains what DNS shows, in words the customer can act on", () => {
    expect(dnsVerdict(domain, target, { cnames: ["Domains.Mail.Example.net."] })).toEqual({ ok: true });
    expect(dnsVerdict(domain, target, { cnames: ["shop.myhost.example"] })).toEqual({
      ok: false,
      reason: "the CNAME of news.example.com points to shop.myhost.example, expected domains.mail.example.net",
    });
    expect(dnsVerdict(domain, target, { error: "ENODATA" })).toMatchObject({ ok: false, reason: expect.stringContaining("create a CNAME record: news.example.com CNAME domains.mail.example.net") });
    expect(dnsVerdict(domain, target, { error: "ETIMEOUT" })).toMatchObject({ ok: false, reason: expect.stringContaining("DNS lookup of news.example.com failed (ETIMEOUT)") });
  });

  it("re-checks DNS with doubling intervals, capped, and fails after the DNS timeout", () => {
    let p = initialProgress(0);
    const waits: number[] = [];
    let now = 0;
    for (let i = 0; i < 6; i++) {
      const step = afterDnsCheck(p, { ok: false, reason: "no CNAME" }, now, t);
      expect(step.effect).toBe("none");
      p = step.progress;
      waits.push(p.nextCheckAt! - now);
      now = p.nextCheckAt!;
    }
    expect(waits).toEqual([1000, 2000, 4000, 8000, 8000, 8000]);
    expect(p.state).toBe("pending_dns");
    const late = afterDnsCheck(p, { ok: false, reason: "the CNAME of x points to y, expected z" }, 60_000, t);
    expect(late.progress).toMatchObject({ state: "failed", nextCheckAt: null });
    expect(late.progress.reason).toMatch(/^the CNAME of x points to y, expected z\. Gave up after 1 minute:/);
  });

  it("asks for a certificate once the CNAME is right, or waits for the budget", () => {
    const step = afterDnsCheck(initialProgress(0), { ok: true }, 5, t);
    expect(step.effect).toBe("issue");
    expect(queued(step.progress, 5, 60_000)).toMatchObject({ state: "pending_dns", nextCheckAt: 60_005, reason: expect.stringMatching(/queued/) });
    expect(issued(step.progress, 5, t)).toMatchObject({ state: "issuing", issuingSince: 5, issuanceAttempts: 1, nextCheckAt: 1005 });
  });

  it("reads cert-manager's conditions", () => {
    expect(certificateVerdict([{ type: "Ready", status: "True", reason: "Ready" }])).toEqual({ kind: "ready" });
    expect(certificateVerdict([{ type: "Ready", status: "False", reason: "DoesNotExist", message: "Issuing certificate as Secret does not exist" }])).toMatchObject({ kind: "pending" });
    expect(certificateVerdict(undefined)).toMatchObject({ kind: "pending" });
    expect(
      certificateVerdict([
        { type: "Ready", status: "False", reason: "DoesNotExist" },
        { type: "Issuing", status: "False", reason: "Failed", message: "The certificate request has failed to complete and will be retried: 403 urn:ietf:params:acme:error:unauthorized" },
      ]),
    ).toEqual({ kind: "failed", message: "Failed: The certificate request has failed to complete and will be retried: 403 urn:ietf:params:acme:error:unauthorized" });
    expect(certificateVerdict([{ type: "Ready", status: "False", reason: "IncorrectIssuer" }, { type: "Issuing", status: "True", reason: "IncorrectIssuer" }])).toMatchObject({ kind: "pending" });
    expect(certificateVerdict([{ type: "Ready", status: "False", reason: "Expired", message: "Certificate expired on 2026-01-01" }])).toEqual({ kind: "failed", message: "Expired: Certificate expired on 2026-01-01" });
  });

  it("becomes active when Ready, and keeps watching it", () => {
    const p = issued(afterDnsCheck(initialProgress(0), { ok: true }, 0, t).progress, 0, t);
    const step = afterCertificateCheck(p, { kind: "ready" }, 2000, t);
    expect(step).toEqual({ effect: "none", progress: expect.objectContaining({ state: "active", activatedAt: 2000, nextCheckAt: 2000 + t.activeRecheckMs, reason: "" }) });
  });

  it("fails with cert-manager's reason, removes the objects, retries with backoff, then stops", () => {
    let p = issued(afterDnsCheck(initialProgress(0), { ok: true }, 0, t).progress, 0, t);
    let step = afterCertificateCheck(p, { kind: "failed", message: "OrderFailed: rate limited" }, 1000, t);
    expect(step.effect).toBe("remove_objects");
    expect(step.progress).toMatchObject({ state: "failed", reason: "certificate issuance failed: OrderFailed: rate limited", nextCheckAt: 1000 + 10_000 });
    // The retry checks the DNS first.
    p = retry(step.progress, 11_000);
    expect(p).toMatchObject({ state: "pending_dns", dnsChecks: 0, dnsSince: 11_000 });
    p = issued(afterDnsCheck(p, { ok: true }, 11_000, t).progress, 11_000, t);
    expect(p.issuanceAttempts).toBe(2);
    step = afterCertificateCheck(p, { kind: "failed", message: "again" }, 12_000, t);
    expect(step.progress).toMatchObject({ state: "failed", nextCheckAt: null });
    expect(step.progress.reason).toMatch(/No more automatic retries after 2 attempts/);
  });

  it("times out an issuance that never finishes, and recreates missing objects", () => {
    const p = issued(afterDnsCheck(initialProgress(0), { ok: true }, 0, t).progress, 0, t);
    const waiting = afterCertificateCheck(p, { kind: "pending", message: "" }, 10_000, t);
    expect(waiting.progress).toMatchObject({ state: "issuing" });
    expect(waiting.progress.nextCheckAt! - 10_000).toBeLessThanOrEqual(t.statusMaxIntervalMs);
    const late = afterCertificateCheck(p, { kind: "pending", message: "Waiting for HTTP-01 challenge propagation" }, 30_000, t);
    expect(late.effect).toBe("remove_objects");
    expect(late.progress.reason).toBe("certificate issuance timed out after 30 seconds (cert-manager: Waiting for HTTP-01 challenge propagation)");
    expect(afterCertificateCheck(p, { kind: "missing" }, 3000, t).progress).toMatchObject({ state: "pending_dns", nextCheckAt: 3000 });
  });

  it("backs off by doubling up to a cap", () => {
    expect([0, 1, 2, 3, 10].map((n) => backoff(100, n, 500))).toEqual([100, 200, 400, 500, 500]);
  });
});
