import { request as httpRequest } from "node:http";
import { startKubeCluster, type KubeCluster, startTestDnsServer, type TestDnsServer } from "@emailsvc/testing";
import { GENEROUS_RATE_LIMIT_ENV } from "../../services/gateway/test/support/harness";
import { runCli } from "../../services/gateway/src/cli";
import { objectNames } from "../../services/portal/src/kube/routing";
import { ADMIN_TOKEN, eventually, startTestPlatform, type TestPlatform } from "./support/platform-client";

// Custom portal domains end to end, through the gateway's REST API, on the
// embedded platform with every real part but the customer's DNS zone: the
// portal's reconciler asks a DNS server started here (its production resolver,
// pointed at it by CUSTOM_DOMAIN_DNS_SERVERS) and creates its objects in a
// real Kubernetes API server (the kube kit, cert-manager's CRDs), where the
// test plays cert-manager by setting the Certificate's Ready condition.

const BUILD_TIMEOUT = 20 * 60_000;
const TARGET = "domains.mail.example.net";
const NAMESPACE = "emailsvc";
const DOMAIN = "news.example.com";

let kube: KubeCluster;
let dns: TestDnsServer;
let t: TestPlatform;
let pro: { id: string; live: string; test: string };
let other: { id: string; live: string };
let starterLive: string;

/** A GET to the portal page with a Host header of our choosing (fetch cannot set Host). */
function page(path: string, host: string): Promise<{ status: number; location: string | undefined; body: string }> {
  const url = new URL(t.platform.portalUrl!);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: url.hostname, port: url.port, path, method: "GET", headers: { host } }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (body += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, location: res.headers.location, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

async function account(name: string, plan: "starter" | "professional"): Promise<{ id: string; live: string; test: string }> {
  const created = await t.call("POST", "/admin/v1/accounts", { admin: true, body: { name, plan } });
  expect(created.status).toBe(201);
  const key = async (mode: string) => (await t.call("POST", `/admin/v1/accounts/${created.body.id}/api-keys`, { admin: true, body: { mode } })).body.key as string;
  return { id: created.body.id, live: await key("live"), test: await key("test") };
}

const setDomain = (key: string, domain: string) => t.call("PUT", "/api/v1/settings/preference-center/custom-domain", { key, body: { domain } });
const getDomain = (key: string) => t.call("GET", "/api/v1/settings/preference-center/custom-domain", { key });

beforeAll(async () => {
  kube = await startKubeCluster();
  await kube.applyCrds("cert-manager");
  await kube.createNamespace(NAMESPACE);
  dns = await startTestDnsServer();
  t = await startTestPlatform("custom-domain", {
    ...GENEROUS_RATE_LIMIT_ENV,
    CUSTOM_DOMAINS_ENABLED: "true",
    CUSTOM_DOMAIN_TARGET: TARGET,
    CUSTOM_DOMAIN_NAMESPACE: NAMESPACE,
    CUSTOM_DOMAIN_ISSUER_NAME: "letsencrypt",
    CUSTOM_DOMAIN_ISSUER_KIND: "ClusterIssuer",
    CUSTOM_DOMAIN_INGRESS_CLASS: "nginx",
    CUSTOM_DOMAIN_SERVICE_NAME: "emailsvc-portal",
    CUSTOM_DOMAIN_SERVICE_PORT: "8081",
    CUSTOM_DOMAIN_INSTANCE: "e2e",
    CUSTOM_DOMAIN_DNS_SERVERS: dns.address,
    CUSTOM_DOMAIN_RECONCILE_INTERVAL_MS: "50",
    CUSTOM_DOMAIN_RECHECK_BASE_MS: "50",
    KUBECONFIG: await kube.kubeconfigFile(undefined, NAMESPACE),
    PUBLIC_API_URL: "https://api.mail.example.net",
  });
  pro = await account("Acme", "professional");
  other = await account("Other", "professional");
  starterLive = (await account("Small", "starter")).live;
}, BUILD_TIMEOUT);

afterAll(async () => {
  await t?.close();
  await dns?.close();
  await kube?.stop();
});

describe("custom domain settings", () => {
  it("needs the professional plan (403 naming it) and a live key to change", async () => {
    const starter = await setDomain(starterLive, DOMAIN);
    expect(starter.status).toBe(403);
    expect(starter.body).toMatchObject({ code: "plan_required", detail: expect.stringContaining("professional plan; this account is on the starter plan") });
    const testKey = await setDomain(pro.test, DOMAIN);
    expect(testKey.status).toBe(403);
    expect(testKey.body.code).toBe("live_key_required");
    expect((await t.call("DELETE", "/api/v1/settings/preference-center/custom-domain", { key: pro.test })).body.code).toBe("live_key_required");
  });

  it("refuses apex domains, IP addresses, wildcards and the platform's own hosts with a field error", async () => {
    for (const [domain, message] of [
      ["example.com", /apex domain/],
      ["192.0.2.10", /IP address/],
      ["*.example.com", /wildcards/],
      ["shop.domains.mail.example.net", /belongs to this platform/],
      ["status.api.mail.example.net", /belongs to this platform/],
      ["https://news.example.com/", /host name only/],
      ["news..example.com", /not a valid host name/],
    ] as const) {
      const res = await setDomain(pro.live, domain);
      expect({ domain, status: res.status, code: res.body.code }).toEqual({ domain, status: 400, code: "invalid_domain" });
      expect(res.body.errors).toEqual([{ field: "domain", message: expect.stringMatching(message) }]);
    }
    expect((await setDomain(pro.live, "")).body.code).toBe("validation_failed");
    expect((await t.call("PUT", "/api/v1/settings/preference-center/custom-domain", { key: pro.live, body: { domain: DOMAIN, state: "active" } })).status).toBe(400);
    expect((await getDomain(pro.live)).body.code).toBe("custom_domain_not_found");
  });

  it("takes a domain, normalised, and shows the CNAME to create and what DNS shows", async () => {
    const res = await setDomain(pro.live, "News.Example.COM.");
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ domain: DOMAIN, state: "pending_dns", dns_record: { name: DOMAIN, type: "CNAME", target: TARGET }, url: null, activated_at: null });
    const checked = await eventually(() => getDomain(pro.live), (r) => r.body.last_check_at !== null);
    expect(checked.body).toMatchObject({ state: "pending_dns", next_check_at: expect.any(String) });
    expect(checked.body.reason).toMatch(/no CNAME record for news\.example\.com is visible yet; create a CNAME record: news\.example\.com CNAME domains\.mail\.example\.net/);
    dns.cnames.set(DOMAIN, "shop.other-host.example.org");
    const wrong = await eventually(() => getDomain(pro.live), (r) => /points to/.test(r.body.reason ?? ""));
    expect(wrong.body.reason).toBe("the CNAME of news.example.com points to shop.other-host.example.org, expected domains.mail.example.net");
    // Per account: the test-mode key reads the same.
    expect((await getDomain(pro.test)).body.domain).toBe(DOMAIN);
  });

  it("refuses a domain another account holds (409), in any state", async () => {
    const res = await setDomain(other.live, "news.EXAMPLE.com");
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ code: "domain_taken", errors: [{ field: "domain", message: "is already claimed by another account" }] });
  });
});

describe("an active custom domain", () => {
  const names = () => objectNames({ accountId: pro.id, domain: DOMAIN });
  const certificate = () => `/apis/cert-manager.io/v1/namespaces/${NAMESPACE}/certificates/${names().name}`;
  const ingress = () => `/apis/networking.k8s.io/v1/namespaces/${NAMESPACE}/ingresses/${names().name}`;
  let token: string;

  beforeAll(async () => {
    dns.cnames.set(DOMAIN, TARGET);
    const issuing = await eventually(() => getDomain(pro.live), (r) => r.body.state === "issuing");
    expect(issuing.body.state).toBe("issuing");
    expect((await kube.request("GET", ingress())).body.spec.rules[0].host).toBe(DOMAIN);
    const patched = await kube.request("PATCH", `${certificate()}/status`, {
      body: { status: { conditions: [{ type: "Ready", status: "True", reason: "Ready", message: "Certificate is up to date", lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, "Z") }] } },
      contentType: "application/merge-patch+json",
    });
    expect(patched.status).toBe(200);
    const active = await eventually(() => getDomain(pro.live), (r) => r.body.state === "active");
    expect(active.body).toMatchObject({ state: "active", reason: null, url: `https://${DOMAIN}/preferences`, activated_at: expect.any(String) });
  });

  it("is in the links the API hands out and in new mail", async () => {
    const sub = await t.call("POST", "/api/v1/subscribers", { key: pro.live, body: { email: "reader@example.com" } });
    const link = await t.call("POST", `/api/v1/subscribers/${sub.body.id}/preference-token`, { key: pro.live });
    expect(link.body.url).toBe(`https://${DOMAIN}/preferences?token=${encodeURIComponent(link.body.token)}`);
    token = link.body.token;

    await t.call("POST", "/api/v1/templates", {
      key: pro.live,
      body: {
        name: "Footer",
        slug: "footer",
        subject: "Hello",
        category: "transactional",
        mjml_content: '<mjml><mj-body><mj-section><mj-column><mj-text><a href="{{preference_center_url}}">Preferences</a></mj-text></mj-column></mj-section></mj-body></mjml>',
      },
    });
    const sent = await t.call("POST", "/api/v1/emails/send", { key: pro.live, body: { template_slug: "footer", to: "reader@example.com" } });
    expect(sent.status).toBe(202);
    const message = await eventually(() => t.call("GET", `/api/v1/emails/${sent.body.id}/sandbox`, { key: pro.live }), (r) => r.status === 200);
    expect(message.body.html).toMatch(/href="https:\/\/news\.example\.com\/preferences\?token(=|&#x3D;)[^"]+"/);
    // Another account's links stay on the platform's address.
    expect((await t.call("POST", "/api/v1/subscribers", { key: other.live, body: { email: "x@example.com" } })).status).toBe(201);
  });

  it("is served by the page on that Host, for its own account only; an unknown Host is refused", async () => {
    const opened = await page(`/preferences?token=${encodeURIComponent(token)}`, DOMAIN);
    expect(opened.status).toBe(303);
    expect(opened.location).toMatch(/^\/preferences\/s\//);
    const session = await page(opened.location!, `${DOMAIN}:443`);
    expect(session.status).toBe(200);
    expect(session.body).toContain("reader@example.com");
    // Forms post to the page's own host (relative actions under the session path).
    expect(session.body).toMatch(/action="\/preferences\/s\//);
    expect(session.body).not.toMatch(/action="https?:/);

    expect((await page(`/preferences?token=${encodeURIComponent(token)}`, "unknown.example.org")).status).toBe(421);
    // The platform's own host (PREFERENCES_URL: localhost) serves every account.
    const platformHost = `localhost:${new URL(t.platform.portalUrl!).port}`;
    expect((await page(`/preferences?token=${encodeURIComponent(token)}`, platformHost)).status).toBe(303);
    // A subscriber of another account is not served on Acme's domain.
    const stranger = await t.call("POST", "/api/v1/subscribers", { key: other.live, body: { email: "stranger@example.com" } });
    const strangerLink = await t.call("POST", `/api/v1/subscribers/${stranger.body.id}/preference-token`, { key: other.live });
    expect(strangerLink.body.url.startsWith(`http://localhost:`)).toBe(true);
    expect((await page(`/preferences?token=${encodeURIComponent(strangerLink.body.token)}`, DOMAIN)).status).toBe(404);
  });

  it("is removed with its Certificate and Ingress, and the domain is free at once", async () => {
    const removed = await t.call("DELETE", "/api/v1/settings/preference-center/custom-domain", { key: pro.live });
    expect(removed.status).toBe(204);
    const gone = await getDomain(pro.live);
    expect(gone.status).toBe(404);
    expect(gone.body.code).toBe("custom_domain_not_found");
    // The portal deletes the Certificate, then the Ingress (two calls): wait for both.
    await eventually(async () => (await kube.request("GET", certificate())).status, (status) => status === 404);
    await eventually(async () => (await kube.request("GET", ingress())).status, (status) => status === 404);
    expect((await kube.request("GET", certificate())).status).toBe(404);
    expect((await kube.request("GET", ingress())).status).toBe(404);
    expect((await setDomain(other.live, DOMAIN)).status).toBe(200);
    // The page no longer serves the old host for Acme (within the Host cache's 30 s: this replica forgot it at once).
    expect((await page(`/preferences?token=${encodeURIComponent(token)}`, DOMAIN)).status).toBe(421);
  });
});

describe("the admin API and CLI", () => {
  it("set, show and remove any account's custom domain, with the plan checked", async () => {
    const set = await t.call("PUT", `/admin/v1/accounts/${pro.id}/custom-domain`, { admin: true, body: { domain: "letters.example.com" } });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({ domain: "letters.example.com", state: "pending_dns" });
    expect((await t.call("GET", `/admin/v1/accounts/${pro.id}/custom-domain`, { admin: true })).body.domain).toBe("letters.example.com");
    expect((await t.call("DELETE", `/admin/v1/accounts/${pro.id}/custom-domain`, { admin: true })).status).toBe(204);
    expect((await t.call("GET", `/admin/v1/accounts/${pro.id}/custom-domain`, { admin: true })).status).toBe(404);
    expect((await t.call("PUT", `/admin/v1/accounts/${t.accountId}/custom-domain`, { admin: true, body: { domain: "x.example.com" } })).body.code).toBe("plan_required");
    expect((await t.call("GET", "/admin/v1/accounts/acc_01jd3x0k8m7y6t5r4q3p2n1m0k/custom-domain", { admin: true })).status).toBe(404);

    const out: string[] = [];
    const io = { env: { EMAILSVC_URL: t.url, ADMIN_TOKEN }, out: (text: string) => out.push(text), err: (text: string) => out.push(text) };
    expect(await runCli(["domains", "set", "--account", pro.id, "--domain", "post.example.com"], io)).toBe(0);
    expect(JSON.parse(out.pop()!)).toMatchObject({ domain: "post.example.com", state: "pending_dns", dns_record: { target: TARGET } });
    expect(await runCli(["domains", "get", "--account", pro.id], io)).toBe(0);
    expect(JSON.parse(out.pop()!).domain).toBe("post.example.com");
    expect(await runCli(["domains", "delete", "--account", pro.id], io)).toBe(0);
    expect(await runCli(["domains", "get", "--account", pro.id], io)).toBe(1);
    expect(out.pop()).toMatch(/404 No custom domain: This account has no custom domain/);
  });
});

describe("a deployment without custom domains", () => {
  it("says so (503 custom_domains_not_enabled), and links stay on PREFERENCES_URL", async () => {
    const off = await startTestPlatform("custom-domain-off");
    try {
      const created = await off.call("POST", "/admin/v1/accounts", { admin: true, body: { name: "Pro", plan: "professional" } });
      const live = (await off.call("POST", `/admin/v1/accounts/${created.body.id}/api-keys`, { admin: true, body: { mode: "live" } })).body.key;
      const res = await off.call("PUT", "/api/v1/settings/preference-center/custom-domain", { key: live, body: { domain: DOMAIN } });
      expect(res.status).toBe(503);
      expect(res.body.code).toBe("custom_domains_not_enabled");
      expect(res.body.detail).toMatch(/CUSTOM_DOMAINS_ENABLED=true/);
      const sub = await off.call("POST", "/api/v1/subscribers", { key: live, body: { email: "plain@example.com" } });
      const link = await off.call("POST", `/api/v1/subscribers/${sub.body.id}/preference-token`, { key: live });
      expect(link.body.url.startsWith("http://localhost:")).toBe(true);
    } finally {
      await off.close();
    }
  });
});
