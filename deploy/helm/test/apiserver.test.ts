// The chart against a real Kubernetes API server (kube-apiserver and
// kube-controller-manager v1.31.4 from @emailsvc/testing), not only schemas:
// ci/custom-domains.yaml rendered by the Helm that scripts/helm/install.sh
// builds, applied server-side into a namespace that enforces Pod Security
// "restricted", with cert-manager's CRDs installed. Then: every object is
// accepted, the Deployments' Pods are created and admitted (they stay Pending:
// no nodes), and the portal's ServiceAccount can do exactly what custom
// domains need (Certificates and Ingresses in its namespace) and nothing else,
// while the other services' accounts can do none of it.
import { execFile } from "node:child_process";
import { join, resolve } from "node:path";
import { parseAllDocuments } from "yaml";
import { COMPONENT_NAMES } from "@emailsvc/manifest";
import { startKubeCluster, type KubeCluster, type KubeObject } from "@emailsvc/testing";

const ROOT = resolve(__dirname, "..", "..", "..");
const CHART = join(ROOT, "deploy", "helm", "emailsvc");
const VALUES = join(CHART, "ci", "custom-domains.yaml");
const RELEASE = "emailsvc";
const NS = "email";
const OTHER_NS = "elsewhere";
// The first run may build Helm (~2 min) and the control plane (7 to 15 min) on cold Go caches.
const SETUP_TIMEOUT = 50 * 60_000; // the kit caps the Go build at 40 min

function run(command: string, args: string[]): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    execFile(command, args, { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${command} ${args.join(" ")}: ${error.message}\n${stderr}`));
      else resolvePromise(stdout);
    });
  });
}

let helmPath: Promise<string> | undefined;
/** The Helm that scripts/helm-check.sh uses, built into the cache on first use. */
const helm = (): Promise<string> =>
  (helmPath ??= run("bash", [join(ROOT, "scripts", "helm", "install.sh")]).then((out) => out.trim().split("\n").pop()!));

async function render(): Promise<KubeObject[]> {
  const yaml = await run(await helm(), ["template", RELEASE, CHART, "--namespace", NS, "-f", VALUES]);
  return parseAllDocuments(yaml)
    .map((doc) => doc.toJS() as KubeObject | null)
    .filter((o): o is KubeObject => o !== null)
    .map((o) => ({ ...o, metadata: { ...o.metadata, namespace: NS } }));
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(250);
  }
}

const certificate = (name: string, namespace: string): KubeObject => ({
  apiVersion: "cert-manager.io/v1",
  kind: "Certificate",
  metadata: { name, namespace, labels: { "app.kubernetes.io/managed-by": "emailsvc-portal", "app.kubernetes.io/instance": RELEASE } },
  spec: {
    secretName: `${name}-tls`,
    dnsNames: ["news.customer.example"],
    issuerRef: { name: "emailsvc-acme", kind: "Issuer", group: "cert-manager.io" },
  },
});

const ingress = (name: string, namespace: string): KubeObject => ({
  apiVersion: "networking.k8s.io/v1",
  kind: "Ingress",
  metadata: { name, namespace, labels: { "app.kubernetes.io/managed-by": "emailsvc-portal", "app.kubernetes.io/instance": RELEASE } },
  spec: {
    ingressClassName: "nginx",
    tls: [{ hosts: ["news.customer.example"], secretName: `${name}-tls` }],
    rules: [
      {
        host: "news.customer.example",
        http: {
          paths: [
            { path: "/", pathType: "Prefix", backend: { service: { name: "emailsvc-portal", port: { number: 8081 } } } },
          ],
        },
      },
    ],
  },
});

describe("the chart on a real Kubernetes API server (ci/custom-domains.yaml)", () => {
  let kube: KubeCluster;
  let objects: KubeObject[];
  const applied: { object: KubeObject; status: number; message: string; warnings: string[] }[] = [];

  beforeAll(async () => {
    [kube, objects] = await Promise.all([startKubeCluster({ controllerManager: true }), render()]);
    await kube.applyCrds("cert-manager");
    const restricted = "restricted";
    await kube.createNamespace(NS, {
      "pod-security.kubernetes.io/enforce": restricted,
      "pod-security.kubernetes.io/enforce-version": "latest",
      "pod-security.kubernetes.io/warn": restricted,
      "pod-security.kubernetes.io/audit": restricted,
    });
    await kube.createNamespace(OTHER_NS);
    for (const object of objects) {
      const res = await kube.apply(object, { fieldManager: "helm" });
      applied.push({ object, status: res.status, message: res.body?.message ?? "", warnings: res.warnings });
    }
  }, SETUP_TIMEOUT);

  afterAll(async () => {
    await kube?.stop();
  });

  it("renders what custom domains need", () => {
    const kinds = objects.map((o) => `${o.kind}/${o.metadata.name}`);
    expect(kinds).toEqual(
      expect.arrayContaining([
        "Role/emailsvc-portal-custom-domains",
        "RoleBinding/emailsvc-portal-custom-domains",
        "Issuer/emailsvc-acme",
        "Ingress/emailsvc-portal",
        "NetworkPolicy/emailsvc-portal-egress",
      ]),
    );
    expect(objects.filter((o) => o.kind === "Deployment")).toHaveLength(6);
  });

  it("accepts every rendered object (server-side apply), without warnings", () => {
    const refused = applied.filter((a) => a.status !== 200 && a.status !== 201);
    expect(refused.map((a) => `${a.object.kind}/${a.object.metadata.name}: ${a.status} ${a.message}`)).toEqual([]);
    // Pod Security in `warn` mode answers with a Warning for a Deployment whose pods it would refuse.
    const warned = applied.filter((a) => a.warnings.length > 0);
    expect(warned.map((a) => `${a.object.kind}/${a.object.metadata.name}: ${a.warnings.join("; ")}`)).toEqual([]);
  });

  it("enforces Pod Security restricted in the namespace (a root pod is refused)", async () => {
    const res = await kube.request("POST", `/api/v1/namespaces/${NS}/pods`, {
      body: { apiVersion: "v1", kind: "Pod", metadata: { name: "rooted" }, spec: { containers: [{ name: "c", image: "busybox" }] } },
    });
    expect(res.status).toBe(403);
    expect(res.body.message).toContain('violates PodSecurity "restricted:latest"');
  });

  it("creates each Deployment's ReplicaSet and Pods, admitted under restricted (Pending: no nodes)", async () => {
    const deployments = objects.filter((o) => o.kind === "Deployment");
    for (const d of deployments) {
      const selector = Object.entries((d.spec as any).selector.matchLabels as Record<string, string>)
        .map(([k, v]) => `${k}=${v}`)
        .join(",");
      const replicas = (d.spec as any).replicas as number;
      const rs = await until(`a ReplicaSet of ${d.metadata.name}`, async () => {
        const res = await kube.request("GET", `/apis/apps/v1/namespaces/${NS}/replicasets?labelSelector=${encodeURIComponent(selector)}`);
        return res.body.items?.length ? res.body.items : undefined;
      });
      expect(rs[0].metadata.ownerReferences[0]).toMatchObject({ kind: "Deployment", name: d.metadata.name });
      const pods = await until(
        `${replicas} Pods of ${d.metadata.name}`,
        async () => {
          const res = await kube.request("GET", `/api/v1/namespaces/${NS}/pods?labelSelector=${encodeURIComponent(selector)}`);
          return res.body.items?.length === replicas ? res.body.items : undefined;
        },
        90_000,
      ).catch(async (error: Error) => {
        // Say why: the ReplicaSet controller records refused creations as events.
        const events = await kube.request("GET", `/api/v1/namespaces/${NS}/events`);
        const failed = (events.body.items ?? []).filter((e: any) => e.reason === "FailedCreate").map((e: any) => e.message);
        throw new Error(`${error.message}; FailedCreate events: ${JSON.stringify(failed)}`);
      });
      for (const pod of pods) {
        expect(pod.status.phase).toBe("Pending");
        expect(pod.spec.serviceAccountName).toBe(d.metadata.name);
      }
    }
  });

  it("mounts an API token into the portal's pods only", async () => {
    const pods = (await kube.request("GET", `/api/v1/namespaces/${NS}/pods`)).body.items as any[];
    const tokenVolume = (pod: any): boolean =>
      (pod.spec.volumes ?? []).some((v: any) => v.projected?.sources?.some((s: any) => s.serviceAccountToken));
    const withToken = pods.filter(tokenVolume).map((p) => p.metadata.labels["app.kubernetes.io/component"]);
    expect(new Set(withToken)).toEqual(new Set(["portal"]));
  });

  describe("the portal's ServiceAccount", () => {
    let token: string;
    const certs = `/apis/cert-manager.io/v1/namespaces/${NS}/certificates`;
    const ingresses = `/apis/networking.k8s.io/v1/namespaces/${NS}/ingresses`;

    beforeAll(async () => {
      token = await kube.serviceAccountToken(NS, `${RELEASE}-portal`);
    });

    it("creates, reads and deletes a Certificate in its namespace, and may not list, watch or change one", async () => {
      const created = await kube.request("POST", certs, { token, body: certificate("news-customer-example", NS) });
      expect(created.status).toBe(201);
      expect((await kube.request("GET", `${certs}/news-customer-example`, { token })).status).toBe(200);
      // The portal reads its objects by name: anything more is refused.
      expect((await kube.request("GET", certs, { token })).status).toBe(403);
      expect((await kube.request("GET", `${certs}?watch=true&timeoutSeconds=1`, { token })).status).toBe(403);
      const patched = await kube.request("PATCH", `${certs}/news-customer-example`, {
        token,
        body: { metadata: { annotations: { "emailsvc.dev/state": "issuing" } } },
        contentType: "application/merge-patch+json",
      });
      expect(patched.status).toBe(403);
      expect((await kube.apply(certificate("news-customer-example", NS), { token, fieldManager: "emailsvc-portal" })).status).toBe(403);
      expect((await kube.request("DELETE", `${certs}/news-customer-example`, { token })).status).toBe(200);
    });

    it("creates and deletes an Ingress routing a custom domain to the portal", async () => {
      const created = await kube.request("POST", ingresses, { token, body: ingress("news-customer-example", NS) });
      expect(created.status).toBe(201);
      expect(created.body.spec.rules[0].host).toBe("news.customer.example");
      expect((await kube.request("GET", `${ingresses}/news-customer-example`, { token })).status).toBe(200);
      expect((await kube.request("GET", ingresses, { token })).status).toBe(403);
      expect((await kube.request("DELETE", `${ingresses}/news-customer-example`, { token })).status).toBe(200);
    });

    it("is allowed exactly its Role's verbs by SelfSubjectAccessReview", async () => {
      const can = async (attributes: Record<string, string>): Promise<boolean> => {
        const res = await kube.request("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", {
          token,
          body: { apiVersion: "authorization.k8s.io/v1", kind: "SelfSubjectAccessReview", spec: { resourceAttributes: attributes } },
        });
        expect(res.status).toBe(201);
        return res.body.status.allowed === true;
      };
      for (const verb of ["get", "list", "watch", "create", "update", "patch", "delete"]) {
        const granted = ["get", "create", "delete"].includes(verb);
        expect({ verb, allowed: await can({ namespace: NS, verb, group: "cert-manager.io", resource: "certificates" }) }).toEqual({ verb, allowed: granted });
        expect({ verb, allowed: await can({ namespace: NS, verb, group: "networking.k8s.io", resource: "ingresses" }) }).toEqual({ verb, allowed: granted });
      }
      expect(await can({ namespace: NS, verb: "deletecollection", group: "cert-manager.io", resource: "certificates" })).toBe(false);
      expect(await can({ namespace: NS, verb: "update", group: "cert-manager.io", resource: "certificates", subresource: "status" })).toBe(false);
      expect(await can({ namespace: NS, verb: "get", resource: "secrets" })).toBe(false);
      expect(await can({ namespace: OTHER_NS, verb: "create", group: "cert-manager.io", resource: "certificates" })).toBe(false);
    });

    it.each([
      ["list Secrets", "GET", `/api/v1/namespaces/${NS}/secrets`],
      ["read the release's Secret", "GET", `/api/v1/namespaces/${NS}/secrets/${RELEASE}-secrets`],
      ["list Pods", "GET", `/api/v1/namespaces/${NS}/pods`],
      ["list ConfigMaps", "GET", `/api/v1/namespaces/${NS}/configmaps`],
      ["list Certificates in another namespace", "GET", `/apis/cert-manager.io/v1/namespaces/${OTHER_NS}/certificates`],
      ["list Ingresses in another namespace", "GET", `/apis/networking.k8s.io/v1/namespaces/${OTHER_NS}/ingresses`],
      ["list Certificates cluster-wide", "GET", "/apis/cert-manager.io/v1/certificates"],
      ["list ClusterIssuers", "GET", "/apis/cert-manager.io/v1/clusterissuers"],
      ["list Issuers", "GET", `/apis/cert-manager.io/v1/namespaces/${NS}/issuers`],
      ["list CertificateRequests", "GET", `/apis/cert-manager.io/v1/namespaces/${NS}/certificaterequests`],
      ["list Services", "GET", `/api/v1/namespaces/${NS}/services`],
      ["list Roles", "GET", `/apis/rbac.authorization.k8s.io/v1/namespaces/${NS}/roles`],
    ])("is refused (403) to %s", async (_what, method, path) => {
      expect((await kube.request(method, path, { token })).status).toBe(403);
    });

    it("is refused (403) to create Secrets, Pods, a Certificate in another namespace, and a ClusterIssuer", async () => {
      const attempts: [string, unknown][] = [
        [`/api/v1/namespaces/${NS}/secrets`, { apiVersion: "v1", kind: "Secret", metadata: { name: "x" }, stringData: { a: "b" } }],
        [`/api/v1/namespaces/${NS}/pods`, { apiVersion: "v1", kind: "Pod", metadata: { name: "x" }, spec: { containers: [{ name: "c", image: "x" }] } }],
        [`/apis/cert-manager.io/v1/namespaces/${OTHER_NS}/certificates`, certificate("x", OTHER_NS)],
        [
          "/apis/cert-manager.io/v1/clusterissuers",
          { apiVersion: "cert-manager.io/v1", kind: "ClusterIssuer", metadata: { name: "x" }, spec: { selfSigned: {} } },
        ],
      ];
      for (const [path, body] of attempts) {
        const res = await kube.request("POST", path, { token, body });
        expect({ path, status: res.status }).toEqual({ path, status: 403 });
      }
    });
  });

  it("installs and upgrades with helm itself, keeping the generated secrets (lookup)", async () => {
    const ns = "helm-install";
    await kube.createNamespace(ns, { "pod-security.kubernetes.io/enforce": "restricted" });
    const kubeconfig = await kube.kubeconfigFile(undefined, ns);
    const args = [RELEASE, CHART, "--kubeconfig", kubeconfig, "--namespace", ns, "-f", join(CHART, "ci", "default-values.yaml")];
    const secret = async (): Promise<Record<string, string>> =>
      (await kube.request("GET", `/api/v1/namespaces/${ns}/secrets/${RELEASE}-secrets`)).body.data;
    // No --wait: without nodes no pod gets ready. kubeVersion (>=1.27) is checked against the server's v1.31.4.
    await run(await helm(), ["install", ...args]);
    const first = await secret();
    expect(Object.keys(first).sort()).toEqual(["ADMIN_TOKEN", "MONGO_URL", "SEALING_KEYS", "SUPPRESSION_KEYS", "TOKEN_SIGNING_KEYS"]);
    await run(await helm(), ["upgrade", ...args]);
    expect(await secret()).toEqual(first);
  });

  it("gives the other services' ServiceAccounts no rights to Certificates or Ingresses", async () => {
    const others = objects
      .filter((o) => o.kind === "ServiceAccount" && o.metadata.name !== `${RELEASE}-portal`)
      .map((o) => o.metadata.name);
    expect(others.sort()).toEqual(COMPONENT_NAMES.filter((c) => c !== "portal").sort().map((c) => `${RELEASE}-${c}`));
    for (const name of others) {
      const token = await kube.serviceAccountToken(NS, name);
      const created = await kube.request("POST", `/apis/cert-manager.io/v1/namespaces/${NS}/certificates`, {
        token,
        body: certificate(`by-${name}`, NS),
      });
      const listed = await kube.request("GET", `/apis/networking.k8s.io/v1/namespaces/${NS}/ingresses`, { token });
      expect({ name, create: created.status, list: listed.status }).toEqual({ name, create: 403, list: 403 });
    }
  });
});
