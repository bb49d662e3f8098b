import { MemoryCounterStore } from "@emailsvc/ratelimit";
import { AppError } from "@emailsvc/errors";
import { createLogger } from "@emailsvc/telemetry";
import { type CallContext } from "@emailsvc/tenancy";
import { openTestStore, STORE_KINDS, testTenant, type TestStore } from "@emailsvc/testing";
import { DEFAULT_TIMING, FAILED_HOST_GAP_MS, type CertificateStatus, type Timing } from "../src/domain/domain-states";
import { DomainStorage } from "../src/storage/domains";
import {
  deleteCustomDomain,
  getCustomDomain,
  resolveCustomDomain,
  setCustomDomain,
  type CustomDomainDeps,
  type DomainRouting,
  type DomainTarget,
} from "../src/usecases/custom-domains";
import { DomainReconciler } from "../src/usecases/reconcile-domains";

// The reconciler and the claims on both storage adapters (the embedded store
// and a real MongoDB-compatible server), with the clock, the DNS and the
// Kubernetes side given by the test: leases, the issuance budget, backoff,
// and a claim changed while the reconciler works on it.

const TARGET = "domains.mail.example.net";
const timing: Timing = { ...DEFAULT_TIMING, recheckBaseMs: 1000, retryBaseMs: 10_000, maxIssuanceAttempts: 3 };

/** Kubernetes as a map: which objects exist and what their Certificate says. */
class FakeRouting implements DomainRouting {
  readonly objects = new Map<string, CertificateStatus>();
  readonly calls: string[] = [];
  onEnsure: ((target: DomainTarget) => Promise<void>) | undefined;
  private key = (t: DomainTarget) => `${t.accountId} ${t.domain}`;
  async ensure(t: DomainTarget) {
    this.calls.push(`ensure ${t.domain}`);
    await this.onEnsure?.(t);
    if (!this.objects.has(this.key(t))) this.objects.set(this.key(t), { kind: "pending", message: "" });
  }
  async status(t: DomainTarget) {
    return this.objects.get(this.key(t)) ?? { kind: "missing" as const };
  }
  async remove(t: DomainTarget) {
    this.calls.push(`remove ${t.domain}`);
    this.objects.delete(this.key(t));
  }
  set(t: DomainTarget, status: CertificateStatus) {
    this.objects.set(this.key(t), status);
  }
}

describe.each(STORE_KINDS)("custom domains on the %s store", (kind) => {
  let test: TestStore;
  let storage: DomainStorage;
  let now: number;
  let dns: Map<string, string[]>;
  let routing: FakeRouting;
  let deps: CustomDomainDeps;
  const logger = createLogger("portal", "silent");
  /**
   * Sets news.example.com for the account, with its CNAME in place, and has
   * cert-manager fail its certificate with `message`; returns the reconciler
   * that saw it (the clock a second after the failure was seen).
   */
  const failedIssuance = async (acme: ReturnType<typeof testTenant>, message: string) => {
    await setCustomDomain(deps, acme, "news.example.com");
    dns.set("news.example.com", [TARGET]);
    const r = reconciler();
    await r.pass();
    routing.set({ accountId: acme.tenant.accountId, domain: "news.example.com" }, { kind: "failed", message });
    now += 1000;
    await r.pass();
    return r;
  };
  const reconciler = (options: { owner?: string; rate?: number } = {}) =>
    new DomainReconciler({
      storage,
      routing,
      resolveCname: async (domain) => {
        const found = dns.get(domain);
        if (!found) throw Object.assign(new Error("no data"), { code: "ENODATA" });
        return found;
      },
      budget: new MemoryCounterStore(),
      issueRate: { limit: options.rate ?? 50, windowMs: 3_600_000 },
      target: TARGET,
      timing,
      logger,
      now: () => now,
      owner: options.owner ?? "replica-a",
    });

  beforeEach(async () => {
    test = await openTestStore(kind, "portal");
    storage = new DomainStorage(test.store);
    await storage.ensureIndexes();
    now = Date.UTC(2026, 10, 23, 12);
    dns = new Map();
    routing = new FakeRouting();
    deps = { storage, enabled: true, target: TARGET, platformHosts: [TARGET], now: () => now };
  });
  afterEach(async () => {
    await test.store.close();
    test.cleanup();
  });

  it("goes pending_dns -> issuing -> active as the CNAME and the Certificate appear", async () => {
    const acme = testTenant("live");
    const set = await setCustomDomain(deps, acme, "News.Example.com.");
    expect(set).toMatchObject({ domain: "news.example.com", state: "pending_dns", dnsRecord: { name: "news.example.com", type: "CNAME", target: TARGET }, lastCheckAt: null });
    const r = reconciler();

    await r.pass();
    let view = await getCustomDomain(deps, acme);
    expect(view).toMatchObject({ state: "pending_dns", lastCheckAt: now, nextCheckAt: now + 1000 });
    expect(view.reason).toMatch(/no CNAME record for news\.example\.com is visible yet; create a CNAME record: news\.example\.com CNAME domains\.mail\.example\.net/);
    expect(routing.calls).toEqual([]);

    dns.set("news.example.com", ["elsewhere.example.org"]);
    now += 1000;
    await r.pass();
    view = await getCustomDomain(deps, acme);
    expect(view.reason).toBe("the CNAME of news.example.com points to elsewhere.example.org, expected domains.mail.example.net");
    expect(view.nextCheckAt).toBe(now + 2000);

    // Not due yet: nothing happens.
    dns.set("news.example.com", [`${TARGET}.`]);
    now += 1000;
    expect(await r.pass()).toEqual({ domains: 0, removals: 0 });
    now += 1000;
    await r.pass();
    expect(await getCustomDomain(deps, acme)).toMatchObject({ state: "issuing", reason: "" });
    expect(routing.calls).toEqual(["ensure news.example.com"]);
    expect(await resolveCustomDomain(deps, acme)).toBe("");

    routing.set({ accountId: acme.tenant.accountId, domain: "news.example.com" }, { kind: "ready" });
    now += 1000;
    await r.pass();
    expect(await getCustomDomain(deps, acme)).toMatchObject({ state: "active", activatedAt: now, nextCheckAt: now + timing.activeRecheckMs });
    // Per account: the test mode's calls see the same domain.
    expect(await resolveCustomDomain(deps, testTenant("test", acme.tenant.accountId))).toBe("news.example.com");
  });

  it("fails with cert-manager's reason, removes the objects, and retries after a backoff with a DNS check first", async () => {
    const acme = testTenant("live");
    const r = await failedIssuance(acme, "OrderFailed: urn:ietf:params:acme:error:dns");
    expect(await getCustomDomain(deps, acme)).toMatchObject({
      state: "failed",
      reason: "certificate issuance failed: OrderFailed: urn:ietf:params:acme:error:dns",
      nextCheckAt: now + timing.retryBaseMs,
    });
    expect(routing.objects.size).toBe(0);
    // The customer broke the DNS meanwhile: the retry finds out before asking for a certificate.
    dns.delete("news.example.com");
    now += timing.retryBaseMs;
    await r.pass();
    expect(await getCustomDomain(deps, acme)).toMatchObject({ state: "pending_dns", nextCheckAt: now + 1000 });
    expect(routing.calls.filter((c) => c.startsWith("ensure"))).toHaveLength(1);
    // "I fixed my DNS": setting it again looks at once.
    expect(await setCustomDomain(deps, acme, "news.example.com")).toMatchObject({ state: "pending_dns", nextCheckAt: now });
    // Out of attempts, it stays failed until the customer sets it again, which starts over.
    dns.set("news.example.com", [TARGET]);
    for (let attempt = 2; attempt <= timing.maxIssuanceAttempts; attempt++) {
      await r.pass();
      routing.set({ accountId: acme.tenant.accountId, domain: "news.example.com" }, { kind: "failed", message: "again" });
      now += 1000;
      await r.pass();
      now += 10 * timing.retryBaseMs;
    }
    expect(await getCustomDomain(deps, acme)).toMatchObject({ state: "failed", nextCheckAt: null, reason: expect.stringMatching(/No more automatic retries after 3 attempts/) });
    expect(await r.pass()).toEqual({ domains: 0, removals: 0 });
    now += FAILED_HOST_GAP_MS;
    expect(await setCustomDomain(deps, acme, "news.example.com")).toMatchObject({ state: "pending_dns", lastCheckAt: null, nextCheckAt: now, reason: "" });
  });

  it("sets a domain whose certificate just failed going again only once FAILED_HOST_GAP_MS has passed (the CA's failed-validation limit per host)", async () => {
    const acme = testTenant("live");
    const r = await failedIssuance(acme, "OrderFailed");
    const failedAt = now;
    now += 60_000;
    const again = await setCustomDomain(deps, acme, "news.example.com");
    expect(again).toMatchObject({ state: "pending_dns", nextCheckAt: failedAt + FAILED_HOST_GAP_MS, reason: expect.stringMatching(/limit of failed validations per host/) });
    // Nothing happens before then, however often it is set.
    await setCustomDomain(deps, acme, "news.example.com");
    expect(await r.pass()).toEqual({ domains: 0, removals: 0 });
    expect(routing.calls.filter((c) => c.startsWith("ensure"))).toHaveLength(1);
    now = failedAt + FAILED_HOST_GAP_MS;
    await r.pass();
    expect(routing.calls.filter((c) => c.startsWith("ensure"))).toHaveLength(2);
    expect(await getCustomDomain(deps, acme)).toMatchObject({ state: "issuing" });
  });

  it("issues at most the budget's Certificates; the others wait their turn", async () => {
    const tenants = [testTenant("live"), testTenant("live"), testTenant("live")];
    for (const [i, tenant] of tenants.entries()) {
      await setCustomDomain(deps, tenant, `news${i}.example.com`);
      dns.set(`news${i}.example.com`, [TARGET]);
    }
    await reconciler({ rate: 2 }).pass();
    const states = await Promise.all(tenants.map((t) => getCustomDomain(deps, t)));
    expect(states.map((s) => s.state).sort()).toEqual(["issuing", "issuing", "pending_dns"]);
    const waiting = states.find((s) => s.state === "pending_dns")!;
    expect(waiting.reason).toMatch(/the DNS record is right; the certificate is queued/);
    // 2 per hour: the next one is due in half an hour.
    expect(waiting.nextCheckAt).toBe(now + 1_800_000);
    expect(routing.calls).toHaveLength(2);
  });

  it("lets one replica act on a domain at a time, and another take over after the lease", async () => {
    const acme = testTenant("live");
    await setCustomDomain(deps, acme, "news.example.com");
    const [mine] = await storage.claimDue("replica-a", now, 60_000, 1);
    expect(mine?._id).toBe(acme.tenant.accountId);
    expect(await storage.claimDue("replica-b", now, 60_000, 1)).toEqual([]);
    // replica-a died holding it: after the lease, replica-b takes it up.
    now += 60_000;
    dns.set("news.example.com", [TARGET]);
    await reconciler({ owner: "replica-b" }).pass();
    expect(await getCustomDomain(deps, acme)).toMatchObject({ state: "issuing" });
    // replica-a's late result is refused (the lease is not its own any more).
    expect(await storage.saveProgress(mine!, "replica-a", { ...mine!, state: "failed" } as never, now)).toBe(false);
  });

  it("refuses another account's domain (any state), and frees a domain at once on delete", async () => {
    const acme = testTenant("live");
    const other = testTenant("live");
    await setCustomDomain(deps, acme, "news.example.com");
    await expect(setCustomDomain(deps, other, "NEWS.example.com")).rejects.toMatchObject({ kind: "conflict", code: "domain_taken" });
    await expect(setCustomDomain(deps, acme, "example.com")).rejects.toMatchObject({ kind: "invalid", code: "invalid_domain" });
    await expect(setCustomDomain(deps, acme, "x.domains.mail.example.net")).rejects.toMatchObject({
      code: "invalid_domain",
      extra: { fieldViolations: [{ field: "domain", description: expect.stringMatching(/belongs to this platform/) }] },
    });

    dns.set("news.example.com", [TARGET]);
    const r = reconciler();
    await r.pass();
    expect(routing.objects.size).toBe(1);
    await deleteCustomDomain(deps, acme);
    await expect(getCustomDomain(deps, acme)).rejects.toMatchObject({ code: "custom_domain_not_found" });
    await expect(deleteCustomDomain(deps, acme)).rejects.toMatchObject({ code: "custom_domain_not_found" });
    // Free for another account before the objects are gone; the removal deletes only acme's.
    await setCustomDomain(deps, other, "news.example.com");
    await r.pass();
    expect(routing.calls).toContain("remove news.example.com");
    expect([...routing.objects.keys()]).toEqual([`${other.tenant.accountId} news.example.com`]);
  });

  it("replaces an account's domain and removes the old one's objects; claiming it back keeps them", async () => {
    const acme = testTenant("live");
    await setCustomDomain(deps, acme, "news.example.com");
    dns.set("news.example.com", [TARGET]);
    const r = reconciler();
    await r.pass();
    await setCustomDomain(deps, acme, "letters.example.com");
    // Back to the first before the removal ran: it is dropped unused.
    await setCustomDomain(deps, acme, "news.example.com");
    now += 1;
    await r.pass();
    expect(routing.calls.filter((c) => c.startsWith("remove"))).toEqual(["remove letters.example.com"]);
    expect(routing.objects.has(`${acme.tenant.accountId} news.example.com`)).toBe(true);
  });

  it("drops a result computed for a claim the customer changed meanwhile, and removes what it made", async () => {
    const acme: CallContext = testTenant("live");
    await setCustomDomain(deps, acme, "news.example.com");
    dns.set("news.example.com", [TARGET]);
    routing.onEnsure = async () => {
      routing.onEnsure = undefined;
      await deleteCustomDomain(deps, acme);
    };
    const r = reconciler();
    await r.pass();
    await expect(getCustomDomain(deps, acme)).rejects.toBeInstanceOf(AppError);
    now += 1;
    await r.pass();
    expect(routing.objects.size).toBe(0);
  });

  it("answers not enabled when the deployment runs without custom domains", async () => {
    const off = { ...deps, enabled: false };
    await expect(setCustomDomain(off, testTenant("live"), "news.example.com")).rejects.toMatchObject({ kind: "unavailable", code: "custom_domains_not_enabled" });
    await expect(getCustomDomain(off, testTenant("live"))).rejects.toMatchObject({ code: "custom_domains_not_enabled" });
    expect(await resolveCustomDomain(off, testTenant("live"))).toBe("");
  });
});
