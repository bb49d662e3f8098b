import { join } from "node:path";
import { readFileSync } from "node:fs";
import { MemoryCounterStore } from "@emailsvc/ratelimit";
import { createLogger } from "@emailsvc/telemetry";
import { openTestStore, startKubeCluster, testTenant, waitFor, type KubeCluster, type TestStore } from "@emailsvc/testing";
import { DEFAULT_TIMING, type Timing } from "../src/domain/domain-states";
import { ACCOUNT_LABEL, DOMAIN_ANNOTATION, KubernetesDomainRouting, objectNames, type KubeRoutingSettings } from "../src/kube/routing";
import { DomainStorage } from "../src/storage/domains";
import { deleteCustomDomain, getCustomDomain, resolveCustomDomain, setCustomDomain, type CustomDomainDeps } from "../src/usecases/custom-domains";
import { DomainReconciler } from "../src/usecases/reconcile-domains";

// The portal's Kubernetes adapter and reconciler against a REAL API server
// (etcd + kube-apiserver + kube-controller-manager of packages/testing's kube
// kit) with cert-manager's CRDs installed, acting as a ServiceAccount that
// holds only what the chart's Role grants (deploy/helm/emailsvc/templates/
// rbac.yaml: Certificates and Ingresses in its namespace). No cert-manager
// controller runs: the test plays it, writing the Certificate's Ready
// condition through the status subresource as the admin. The DNS is the test's.

const BUILD_TIMEOUT = 20 * 60_000;
const NAMESPACE = "emailsvc-domains";
const TARGET = "domains.mail.example.net";
const settings: KubeRoutingSettings = {
  namespace: NAMESPACE,
  issuerName: "letsencrypt",
  issuerKind: "ClusterIssuer",
  ingressClass: "nginx",
  serviceName: "emailsvc-portal",
  servicePort: 8081,
  instance: "emailsvc-test",
};
const timing: Timing = { ...DEFAULT_TIMING, recheckBaseMs: 1000, retryBaseMs: 60_000 };

describe("custom domains on a real Kubernetes API server", () => {
  let kube: KubeCluster;
  let test: TestStore;
  let storage: DomainStorage;
  let deps: CustomDomainDeps;
  let reconciler: DomainReconciler;
  let now = Date.now();
  const dns = new Map<string, string[]>();
  const acme = testTenant("live");
  const domain = "news.example.com";
  const { name, secretName } = objectNames({ accountId: acme.tenant.accountId, domain });
  const certificatePath = (n = name) => `/apis/cert-manager.io/v1/namespaces/${NAMESPACE}/certificates/${n}`;
  const ingressPath = (n = name) => `/apis/networking.k8s.io/v1/namespaces/${NAMESPACE}/ingresses/${n}`;

  /** Plays cert-manager: the Certificate's conditions, through the status subresource. */
  async function setConditions(conditions: Array<Record<string, string>>, n = name): Promise<void> {
    const res = await kube.request("PATCH", `${certificatePath(n)}/status`, {
      body: { status: { conditions: conditions.map((c) => ({ lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, "Z"), ...c })) } },
      contentType: "application/merge-patch+json",
    });
    expect(res.status).toBe(200);
  }

  beforeAll(async () => {
    kube = await startKubeCluster({ controllerManager: true });
    await kube.applyCrds("cert-manager");
    await kube.createNamespace(NAMESPACE);
    // The chart's Role for the portal (its rules, read from the chart), and its ServiceAccount's token.
    const role = await kube.apply({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: { name: "portal-custom-domains", namespace: NAMESPACE },
      rules: chartRoleRules(),
    });
    expect(role.status).toBeLessThan(300);
    const binding = await kube.apply({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: "portal-custom-domains", namespace: NAMESPACE },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "portal-custom-domains" },
      subjects: [{ kind: "ServiceAccount", name: "portal", namespace: NAMESPACE }],
    });
    expect(binding.status).toBeLessThan(300);
    const token = await kube.serviceAccountToken(NAMESPACE, "portal");

    test = await openTestStore("embedded", "portal");
    storage = new DomainStorage(test.store);
    await storage.ensureIndexes();
    deps = { storage, enabled: true, target: TARGET, platformHosts: [TARGET], now: () => now };
    reconciler = new DomainReconciler({
      storage,
      routing: KubernetesDomainRouting.fromKubeconfig(kube.kubeconfig(token, NAMESPACE), settings),
      resolveCname: async (host) => {
        const found = dns.get(host);
        if (!found) throw Object.assign(new Error("no data"), { code: "ENODATA" });
        return found;
      },
      budget: new MemoryCounterStore(),
      issueRate: { limit: 50, windowMs: 3_600_000 },
      target: TARGET,
      timing,
      logger: createLogger("portal", "silent"),
      now: () => now,
    });
  }, BUILD_TIMEOUT);

  afterAll(async () => {
    await test?.store.close();
    test?.cleanup();
    await kube?.stop();
  });

  it("creates nothing before the CNAME points at the target", async () => {
    await setCustomDomain(deps, acme, domain);
    await reconciler.pass();
    expect(await getCustomDomain(deps, acme)).toMatchObject({ state: "pending_dns", reason: expect.stringMatching(/no CNAME record/) });
    expect((await kube.request("GET", certificatePath())).status).toBe(404);
    expect((await kube.request("GET", ingressPath())).status).toBe(404);
  });

  it("creates the Ingress and the Certificate (owned by the Ingress) with the host, labels and issuer", async () => {
    dns.set(domain, [TARGET]);
    now += 1000;
    await reconciler.pass();
    expect(await getCustomDomain(deps, acme)).toMatchObject({ state: "issuing" });

    const ingress = (await kube.request("GET", ingressPath())).body;
    const labels = {
      "app.kubernetes.io/managed-by": "emailsvc-portal",
      "app.kubernetes.io/instance": "emailsvc-test",
      [ACCOUNT_LABEL]: acme.tenant.accountId,
    };
    expect(ingress.metadata.labels).toMatchObject(labels);
    expect(ingress.metadata.annotations[DOMAIN_ANNOTATION]).toBe(domain);
    expect(ingress.spec).toEqual({
      ingressClassName: "nginx",
      tls: [{ hosts: [domain], secretName }],
      rules: [
        {
          host: domain,
          http: { paths: [{ path: "/", pathType: "Prefix", backend: { service: { name: "emailsvc-portal", port: { number: 8081 } } } }] },
        },
      ],
    });

    const certificate = (await kube.request("GET", certificatePath())).body;
    expect(certificate.metadata.labels).toMatchObject(labels);
    expect(certificate.metadata.annotations[DOMAIN_ANNOTATION]).toBe(domain);
    expect(certificate.metadata.ownerReferences).toEqual([{ apiVersion: "networking.k8s.io/v1", kind: "Ingress", name, uid: ingress.metadata.uid }]);
    expect(certificate.spec).toMatchObject({
      secretName,
      dnsNames: [domain],
      issuerRef: { name: "letsencrypt", kind: "ClusterIssuer", group: "cert-manager.io" },
    });
    // Matching by the chart's selector finds exactly these.
    const selector = encodeURIComponent("app.kubernetes.io/managed-by=emailsvc-portal,app.kubernetes.io/instance=emailsvc-test");
    const listed = await kube.request("GET", `/apis/cert-manager.io/v1/namespaces/${NAMESPACE}/certificates?labelSelector=${selector}`);
    expect(listed.body.items.map((c: { metadata: { name: string } }) => c.metadata.name)).toEqual([name]);
  });

  it("waits while cert-manager issues, and is active once the Certificate is Ready", async () => {
    await setConditions([{ type: "Ready", status: "False", reason: "DoesNotExist", message: "Issuing certificate as Secret does not exist" }, { type: "Issuing", status: "True", reason: "DoesNotExist", message: "Issuing certificate as Secret does not exist" }]);
    now += 1000;
    await reconciler.pass();
    expect(await getCustomDomain(deps, acme)).toMatchObject({ state: "issuing" });
    expect(await resolveCustomDomain(deps, acme)).toBe("");

    await setConditions([{ type: "Ready", status: "True", reason: "Ready", message: "Certificate is up to date and has not expired" }]);
    now += 10_000;
    await reconciler.pass();
    expect(await getCustomDomain(deps, acme)).toMatchObject({ state: "active", reason: "", activatedAt: now });
    expect(await resolveCustomDomain(deps, acme)).toBe(domain);
  });

  it("fails with cert-manager's reason when Ready turns False, deletes both objects, and retries later", async () => {
    await setConditions([{ type: "Ready", status: "False", reason: "Expired", message: "Certificate expired on Sun, 01 Nov 2026 00:00:00 UTC" }]);
    now += timing.activeRecheckMs;
    await reconciler.pass();
    const failed = await getCustomDomain(deps, acme);
    expect(failed).toMatchObject({
      state: "failed",
      reason: "certificate issuance failed: Expired: Certificate expired on Sun, 01 Nov 2026 00:00:00 UTC",
      nextCheckAt: now + timing.retryBaseMs,
    });
    expect((await kube.request("GET", certificatePath())).status).toBe(404);
    expect((await kube.request("GET", ingressPath())).status).toBe(404);

    // The retry: DNS still right, so both objects are made again.
    now += timing.retryBaseMs;
    await reconciler.pass();
    expect(await getCustomDomain(deps, acme)).toMatchObject({ state: "issuing" });
    expect((await kube.request("GET", certificatePath())).status).toBe(200);
  });

  it("removes both objects when the customer deletes the domain", async () => {
    await deleteCustomDomain(deps, acme);
    now += 1;
    expect(await reconciler.pass()).toMatchObject({ removals: 1 });
    expect((await kube.request("GET", certificatePath())).status).toBe(404);
    expect((await kube.request("GET", ingressPath())).status).toBe(404);
  });

  it("leaves the Certificate to the garbage collector when only its Ingress is deleted", async () => {
    const other = testTenant("live");
    const host = "letters.example.com";
    dns.set(host, [TARGET]);
    await setCustomDomain(deps, other, host);
    now += 1;
    await reconciler.pass();
    const names = objectNames({ accountId: other.tenant.accountId, domain: host });
    expect((await kube.request("GET", certificatePath(names.name))).status).toBe(200);
    expect((await kube.request("DELETE", ingressPath(names.name))).status).toBe(200);
    await waitFor(async () => ((await kube.request("GET", certificatePath(names.name))).status === 404 ? true : undefined), "the Certificate collected", 60_000);
    // The reconciler notices its objects are gone and makes them again.
    now += 10_000;
    await reconciler.pass();
    now += 1;
    await reconciler.pass();
    expect((await kube.request("GET", ingressPath(names.name))).status).toBe(200);
    expect((await kube.request("GET", certificatePath(names.name))).status).toBe(200);
  });
});

/** The rules of the chart's custom-domain Role (deploy/helm/emailsvc/templates/rbac.yaml), so this test runs with exactly the rights the chart grants. */
function chartRoleRules(): Array<{ apiGroups: string[]; resources: string[]; verbs: string[] }> {
  const template = readFileSync(join(__dirname, "..", "..", "..", "deploy", "helm", "emailsvc", "templates", "rbac.yaml"), "utf8");
  const list = (text: string) => text.split(",").map((item) => item.trim());
  const rules = [...template.matchAll(/- apiGroups: \[([^\]]*)\]\s+resources: \[([^\]]*)\]\s+verbs: \[([^\]]*)\]/g)].map((m) => ({
    apiGroups: list(m[1]!),
    resources: list(m[2]!),
    verbs: list(m[3]!),
  }));
  if (rules.length !== 2) throw new Error(`expected the chart's two custom-domain rules, found ${rules.length}`);
  return rules;
}
