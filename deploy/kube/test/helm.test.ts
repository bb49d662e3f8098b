// The chart on a real node: `helm install` of deploy/helm/emailsvc with the
// project's own image (`npm run image`, imported into the node's containerd)
// into a namespace that enforces Pod Security "restricted", against FerretDB
// (on PostgreSQL), Kafka and an SMTP sink that the testing kit runs on the
// host at the node address, where Pods reach them. Then: every Deployment
// turns Ready through its own gRPC and HTTP probes; REST calls through the
// gateway's Service (its ClusterIP, from the host) reach every service across
// Pods: an account and a live key from the admin API, a subscriber, a
// template, one email sent over SMTP to the sink, a small campaign, and the
// preference page of the portal through the portal's Service. The chart's
// NetworkPolicies are enforced from the install on, by kube-router's network
// policy controller (built from its Go module, run on the host beside the
// bridge CNI plugin, which alone ignores them: node.test.ts): Pods without a
// caller's labels, in another namespace or in the release's, cannot open
// subscribers' gRPC port, and reach the gateway's and the portal's public
// ports; the gateway, the allowed caller, serves every call above. Then `helm upgrade` to the same image under
// another tag rolls every Deployment while a loop of REST calls fails none;
// a delivery Pod deleted (SIGTERM and its drain) in the middle of a campaign
// loses and repeats nothing; one killed (SIGKILL) loses nothing, and repeats
// only what the relay had taken but delivery not yet recorded.
// Custom portal domains for real: cert-manager's controller (built from its Go
// module, run on the host) with a CA issuer of the test's own CA; the chart
// installed with portal.customDomains on and that issuer. A domain set through
// the REST API, its CNAME served by a DNS server the portal asks
// (CUSTOM_DOMAIN_DNS_SERVERS), gets its Ingress and Certificate from the
// portal's Pod (in-cluster, with its ServiceAccount token), a certificate
// issued by cert-manager and chaining to the CA, its Secret, and turns
// `active`. A Pod of the project's image calls the API server in-cluster
// with its ServiceAccount token.
//
// Run with `npm run test:kube` (root; one node per machine at a time).
import { execFile } from "node:child_process";
import { X509Certificate } from "node:crypto";
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import type { TLSSocket } from "node:tls";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { MongoClient } from "mongodb";
import { COMPONENT_NAMES } from "@emailsvc/manifest";
import {
  KUBE_NODE_IMAGES,
  SmtpSink,
  startCertManager,
  startFerretDB,
  startKubeNode,
  startKubeRouter,
  startLocalKafka,
  startTestDnsServer,
  startTraefik,
  type CertManager,
  type KafkaServer,
  type KubeNode,
  type KubeRouter,
  type MongoServer,
  type TestDnsServer,
  type Traefik,
} from "@emailsvc/testing";
import { eventually } from "./support/poll";

const ROOT = resolve(__dirname, "..", "..", "..");
const CHART = join(ROOT, "deploy", "helm", "emailsvc");
const RELEASE = "emailsvc";
const NS = "email";
const ADMIN_TOKEN = "helm-test-admin-token-0123456789abcdef";
// Cold caches build the node (10 to 20 min), Helm (~2 min) and the image's base (minutes).
const SETUP_TIMEOUT = 50 * 60_000;
/** The cert-manager Issuer (kind CA) of the portal's certificates, and its CA's Secret. */
const CA_ISSUER = "portal-ca";
/** CUSTOM_DOMAIN_TARGET: what customers' CNAMEs point at. */
// A public suffix each (the portal refuses others: no certificate authority would sign them); RFC 2606 names.
const DOMAIN_TARGET = "portals.example.net";
const CUSTOM_DOMAIN = "preferences.example.org";
const MJML = "<mjml><mj-body><mj-section><mj-column><mj-text>Hello {{metadata.name}}</mj-text></mj-column></mj-section></mj-body></mjml>";

function run(command: string, args: string[], timeoutMs = 20 * 60_000): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    execFile(command, args, { cwd: ROOT, maxBuffer: 64 * 1024 * 1024, timeout: timeoutMs }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${command} ${args.join(" ")}: ${error.message}\n${stdout}\n${stderr}`));
      else resolvePromise(stdout);
    });
  });
}


/**
 * The image as `npm run image` builds it (its caches make a warm build short),
 * or EMAILSVC_IMAGE_TAR when set (a tar it wrote, as `npm run test:image` takes): its name and tar.
 */
async function buildImage(): Promise<{ name: string; tar: string }> {
  const given = process.env.EMAILSVC_IMAGE_TAR;
  if (given) return { name: imageName(JSON.parse(await run("tar", ["-xOf", given, "manifest.json"]))), tar: given };
  const last = (await run("bash", [join(ROOT, "scripts", "image", "build.sh")], 40 * 60_000)).trim().split("\n").pop()!;
  const [name, tar] = last.split(" ");
  return { name: name!, tar: tar! };
}

const imageName = (manifest: { RepoTags: string[] }[]): string => manifest[0]!.RepoTags[0]!;

/**
 * The same image under another tag (skopeo, which `npm run image` uses, copies
 * the archive under the new name): what `helm upgrade` rolls the Deployments to.
 */
async function retag(image: { name: string; tar: string }, dir: string, tag: string): Promise<{ name: string; tar: string }> {
  const name = `${image.name.split(":")[0]}:${tag}`;
  const tar = join(dir, `emailsvc-${tag}.tar`);
  await run("skopeo", ["copy", "-q", `docker-archive:${image.tar}`, `docker-archive:${tar}:${name}`]);
  return { name, tar };
}

/** The test's own certificate authority: a key and a self-signed CA certificate (openssl), valid a day. */
async function makeCa(dir: string): Promise<{ cert: string; key: string }> {
  const [keyFile, certFile] = [join(dir, "ca.key"), join(dir, "ca.crt")];
  await run("openssl", [
    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", keyFile, "-out", certFile,
    "-days", "1", "-subj", "/CN=emailsvc test CA", "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
  ]);
  return { cert: await readFile(certFile, "utf8"), key: await readFile(keyFile, "utf8") };
}

/** The Helm that scripts/helm/install.sh builds into the cache. */
async function helmBinary(): Promise<string> {
  return (await run("bash", [join(ROOT, "scripts", "helm", "install.sh")])).trim().split("\n").pop()!;
}

describe("helm install of the chart on a real node", () => {
  const started = Date.now();
  let node: KubeNode;
  let mongo: MongoServer | undefined;
  let kafka: KafkaServer | undefined;
  let sink: SmtpSink | undefined;
  let dns: TestDnsServer | undefined;
  let certManager: CertManager | undefined;
  let traefik: Traefik | undefined;
  let kubeRouter: KubeRouter | undefined;
  let customerAccount = "";
  let ca: { cert: string; key: string };
  let helm: string;
  let image: { name: string; tar: string };
  let next: { name: string; tar: string };
  let work: string;
  let kubeconfig: string;
  let installMs = 0;
  let gateway = "";
  let portal = "";
  let key = "";
  let readerId = "";
  /** Reads that cross to each service behind the gateway, for the loop during the upgrade. */
  const reads: string[] = [];

  /** A JSON call through the gateway's Service: as the operator (`admin`) or with the live key. */
  const call = async (method: string, path: string, body?: unknown, admin = false): Promise<{ status: number; body: any }> => {
    const headers: Record<string, string> = admin ? { authorization: `Bearer ${ADMIN_TOKEN}` } : { "x-api-key": key };
    if (body !== undefined) headers["content-type"] = "application/json";
    const res = await fetch(`${gateway}${path}`, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };

  /** GET of the portal's Service at its ClusterIP, with the Host of PREFERENCES_URL. */
  const portalGet = (path: string) =>
    new Promise<{ status: number; location: string; text: string }>((resolvePromise, reject) => {
      const req = httpRequest(`${portal}${path}`, { headers: { host: `${RELEASE}-portal.${NS}.svc.cluster.local:8081` } }, (res) => {
        let text = "";
        res.on("data", (d: Buffer) => (text += d.toString()));
        res.on("end", () => resolvePromise({ status: res.statusCode ?? 0, location: res.headers.location ?? "", text }));
      });
      req.on("error", reject);
      req.end();
    });

  beforeAll(async () => {
    [image, helm] = await Promise.all([buildImage(), helmBinary()]);
    work = await mkdtemp(join(tmpdir(), "emailsvc-helm-"));
    next = await retag(image, work, `${image.name.split(":")[1]}-next`);
    node = await startKubeNode({ images: [image.tar, next.tar] });
    // The servers listen at the node address, which exists once the node runs (its bridge holds it).
    [mongo, kafka, sink] = await Promise.all([
      startFerretDB({ host: node.nodeAddress }),
      startLocalKafka({ host: node.nodeAddress }),
      new SmtpSink({ host: node.nodeAddress }).start(),
    ]);
    await node.createNamespace(NS, { "pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest" });
    kubeconfig = await node.kubeconfigFile();
    // Customers' DNS as the portal sees it, and cert-manager with a CA issuer in the release's namespace.
    dns = await startTestDnsServer(node.nodeAddress);
    // NetworkPolicies enforced before the chart's Pods start, so that every call below passes through them.
    [certManager, traefik, kubeRouter] = await Promise.all([startCertManager(node), startTraefik(node, { address: node.nodeAddress }), startKubeRouter(node)]);
    ca = await makeCa(work);
    const b64 = (text: string) => Buffer.from(text).toString("base64");
    const secret = { apiVersion: "v1", kind: "Secret", type: "kubernetes.io/tls", metadata: { name: CA_ISSUER, namespace: NS }, data: { "tls.crt": b64(ca.cert), "tls.key": b64(ca.key) } };
    expect((await node.apply(secret)).status).toBeLessThan(300);
    expect((await node.apply({ apiVersion: "cert-manager.io/v1", kind: "Issuer", metadata: { name: CA_ISSUER, namespace: NS }, spec: { ca: { secretName: CA_ISSUER } } })).status).toBeLessThan(300);
    const [repository, tag] = image.name.split(":");
    const values = {
      image: { repository, tag, pullPolicy: "Never" },
      config: {
        kafkaBrokers: kafka.brokers,
        // Links in mail name the portal's Service; the test opens them at its ClusterIP.
        env: { PREFERENCES_URL: `http://${RELEASE}-portal.${NS}.svc.cluster.local:8081` },
      },
      secrets: { adminToken: ADMIN_TOKEN, mongoUrl: mongo.url, extra: { SMTP_URL: sink.url() } },
      // One Pod each: seven Node processes on a shared two-core machine.
      componentDefaults: { replicas: 1 },
      components: {
        // Slow enough (60 recipients: 12 s) that a delivery Pod is stopped in the middle of a campaign, after its preStop sleep of 5 s.
        campaigns: { env: { CAMPAIGN_RATE: "5/1s" } },
        delivery: {
          env: { EMAIL_PROVIDER: "smtp", EMAIL_FROM: "News <news@sender.example>" },
          secretEnv: ["MONGO_URL", "TOKEN_SIGNING_KEYS", "SEALING_KEYS", "SMTP_URL"],
        },
        // The DNS server the CNAME check asks; the first recheck soon (a fresh domain's CNAME comes after it is set).
        portal: { env: { CUSTOM_DOMAIN_DNS_SERVERS: dns.address, CUSTOM_DOMAIN_RECHECK_BASE_MS: "1000", CUSTOM_DOMAIN_RECONCILE_INTERVAL_MS: "1000" } },
      },
      portal: {
        customDomains: { enabled: true, target: DOMAIN_TARGET },
        issuer: { create: false, kind: "Issuer", name: CA_ISSUER },
      },
    };
    const valuesFile = join(work, "values.json");
    await writeFile(valuesFile, JSON.stringify(values, null, 2));
    const t = Date.now();
    try {
      await run(helm, ["install", RELEASE, CHART, "--namespace", NS, "--kubeconfig", kubeconfig, "-f", valuesFile, "--wait", "--timeout", "15m"]);
    } catch (error) {
      throw new Error(`${(error as Error).message}\n${await node.describePods(NS)}`);
    }
    installMs = Date.now() - t;
    const clusterIP = async (name: string) => (await node.request("GET", `/api/v1/namespaces/${NS}/services/${name}`)).body.spec.clusterIP as string;
    gateway = `http://${await clusterIP(`${RELEASE}-gateway`)}:8080`;
    portal = `http://${await clusterIP(`${RELEASE}-portal`)}:8081`;
    process.stdout.write(`helm.test: helm install --wait (every Pod Ready) took ${(installMs / 1000).toFixed(1)} s; setup ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  }, SETUP_TIMEOUT);

  afterAll(async () => {
    try {
      await Promise.allSettled([certManager?.stop(), traefik?.stop(), kubeRouter?.stop()]);
      await node?.stop();
    } finally {
      await Promise.allSettled([mongo?.stop(), kafka?.stop(), sink?.close(), dns?.close(), work ? rm(work, { recursive: true, force: true }) : undefined]);
      process.stdout.write(`helm.test: the whole test took ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
    }
  }, 180_000);

  it("runs every component's Deployment Ready from the project's image, in a namespace enforcing restricted", async () => {
    const deployments = (await node.request("GET", `/apis/apps/v1/namespaces/${NS}/deployments`)).body.items as any[];
    expect(deployments.map((d) => d.metadata.name).sort()).toEqual(COMPONENT_NAMES.map((c) => `${RELEASE}-${c}`).sort());
    for (const d of deployments) {
      expect({ name: d.metadata.name, ready: d.status.readyReplicas }).toEqual({ name: d.metadata.name, ready: d.spec.replicas });
      expect(d.spec.template.spec.containers[0].image).toBe(image.name);
    }
    const pods = (await node.request("GET", `/api/v1/namespaces/${NS}/pods?labelSelector=app.kubernetes.io/instance%3D${RELEASE}`)).body.items as any[];
    expect(pods).toHaveLength(COMPONENT_NAMES.length);
    for (const pod of pods) {
      expect(pod.status.conditions.find((c: { type: string }) => c.type === "Ready").status).toBe("True");
      // Their probes: gRPC health for the services, HTTP for the gateway.
      expect(pod.spec.containers[0].readinessProbe.grpc ?? pod.spec.containers[0].readinessProbe.httpGet).toBeDefined();
    }
    const ns = (await node.request("GET", `/api/v1/namespaces/${NS}`)).body;
    expect(ns.metadata.labels["pod-security.kubernetes.io/enforce"]).toBe("restricted");
  });

  it("serves the REST API through the gateway's Service, and sends an email over SMTP to the sink", async () => {
    expect((await fetch(`${gateway}/readyz`)).status).toBe(200);
    const account = await call("POST", "/admin/v1/accounts", { name: "On a node" }, true);
    expect(account.status).toBe(201);
    const created = await call("POST", `/admin/v1/accounts/${account.body.id}/api-keys`, { mode: "live" }, true);
    expect(created.status).toBe(201);
    key = created.body.key;
    expect(key).toMatch(/^sk_live_/);

    const subscriber = await call("POST", "/api/v1/subscribers", { email: "reader@example.com", metadata: { name: "Reader" } });
    expect(subscriber.status).toBe(201);
    readerId = subscriber.body.id;
    const template = await call("POST", "/api/v1/templates", { name: "receipt", slug: "receipt", subject: "For {{metadata.name}}", category: "transactional", mjml_content: MJML });
    expect(template.status).toBe(201);
    const sent = await call("POST", "/api/v1/emails/send", { template_slug: "receipt", to: "reader@example.com" });
    expect(sent.status).toBe(202);

    const arrived = await eventually("the email at the sink", async () => (sink!.to("reader@example.com").length > 0 ? sink!.to("reader@example.com") : undefined));
    expect(arrived).toHaveLength(1);
    expect(arrived[0]!.accepted).toBe(true);
    expect(arrived[0]!.parsed.subject).toBe("For Reader");
    expect(arrived[0]!.parsed.text).toContain("Hello Reader");
    const email = await eventually("the email recorded sent", async () => {
      const res = await call("GET", `/api/v1/emails/${sent.body.id}`);
      return res.body.status === "sent" ? res.body : undefined;
    });
    expect(email.to).toBe("reader@example.com");
    reads.push(`/api/v1/subscribers/${readerId}`, `/api/v1/templates/${template.body.id}`, `/api/v1/emails/${sent.body.id}`);
  }, 120_000);

  it("sends a small campaign: each recipient once", async () => {
    expect((await call("POST", "/api/v1/tags", { name: "everyone" })).status).toBe(201);
    const template = await call("POST", "/api/v1/templates", { name: "news", slug: "news", subject: "News for {{metadata.name}}", category: "marketing", mjml_content: MJML });
    expect(template.status).toBe(201);
    const recipients = Array.from({ length: 5 }, (_, i) => `c${i}@example.com`);
    for (const [i, email] of recipients.entries()) {
      expect((await call("POST", "/api/v1/subscribers", { email, tags: ["everyone"], metadata: { name: `C${i}` } })).status).toBe(201);
    }
    const campaign = await call("POST", "/api/v1/campaigns", { name: "First", template_id: template.body.id, tag_filter: { include_tags: ["everyone"] } });
    expect(campaign.status).toBe(201);
    const send = await call("POST", `/api/v1/campaigns/${campaign.body.id}/send`);
    expect(send.body.total_recipients).toBe(recipients.length);
    const done = await campaignSent(campaign.body.id, 120_000);
    expect(done.counts).toMatchObject({ total: 5, sent: 5, failed: 0 });
    reads.push(`/api/v1/campaigns/${campaign.body.id}`);
    for (const [i, email] of recipients.entries()) {
      const copies = sink!.to(email).filter((m) => m.accepted);
      expect(copies.map((m) => m.parsed.subject)).toEqual([`News for C${i}`]);
      // A marketing mail carries its one-click unsubscribe (delivery signs it with the chart's keys).
      expect(copies[0]!.raw).toMatch(/^List-Unsubscribe: <http/im);
    }
  }, 180_000);

  it("serves the portal's preference page through its Service, from a link the gateway minted", async () => {
    const link = await call("POST", `/api/v1/subscribers/${readerId}/preference-token`);
    expect(link.status).toBe(201);
    expect(link.body.url).toMatch(new RegExp(`^http://${RELEASE}-portal\\.${NS}\\.svc\\.cluster\\.local:8081/preferences\\?token=`));
    // With the Host of the link: with custom domains on, the portal answers another host only if it is an active custom domain.
    const first = await portalGet(link.body.url.slice(link.body.url.indexOf("/preferences")));
    expect(first.status).toBe(303);
    const page = await portalGet(first.location);
    expect(page.status).toBe(200);
    expect(page.text).toContain("reader@example.com");
  }, 60_000);

  it("lets a Pod call the API server in-cluster with its ServiceAccount token", async () => {
    // The project's image (node) as any in-cluster client: KUBERNETES_SERVICE_HOST/PORT, the mounted token and CA.
    const script = [
      'const https = require("node:https"), fs = require("node:fs"), dir = "/var/run/secrets/kubernetes.io/serviceaccount";',
      'const req = https.request({ host: process.env.KUBERNETES_SERVICE_HOST, port: process.env.KUBERNETES_SERVICE_PORT, path: "/apis/authentication.k8s.io/v1/selfsubjectreviews", method: "POST",',
      '  ca: fs.readFileSync(dir + "/ca.crt"), servername: "kubernetes.default.svc", headers: { authorization: "Bearer " + fs.readFileSync(dir + "/token", "utf8"), "content-type": "application/json" } },',
      '  (res) => { let b = ""; res.on("data", (d) => (b += d)); res.on("end", () => console.log(res.statusCode + " " + b)); });',
      'req.on("error", (e) => { console.log("error " + e.message); process.exitCode = 1; });',
      'req.end(JSON.stringify({ apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" }));',
    ].join("\n");
    const name = "whoami";
    const pod = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name, namespace: NS },
      spec: {
        restartPolicy: "Never",
        automountServiceAccountToken: true,
        securityContext: { runAsNonRoot: true, runAsUser: 10001, seccompProfile: { type: "RuntimeDefault" } },
        containers: [
          {
            name: "c",
            image: image.name,
            imagePullPolicy: "Never",
            command: ["node", "-e", script],
            securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] }, readOnlyRootFilesystem: true },
          },
        ],
      },
    };
    expect((await node.apply(pod)).status).toBe(201);
    const phase = await node.waitForPodEnd(NS, name);
    const log = await node.podLogs(NS, name);
    expect({ phase, log }).toMatchObject({ phase: "Succeeded" });
    const [status, ...body] = log.trim().split(" ");
    expect(status).toBe("201");
    expect(JSON.parse(body.join(" ")).status.userInfo.username).toBe(`system:serviceaccount:${NS}:default`);
  }, 120_000);

  it("issues a real certificate through cert-manager's CA issuer for a custom portal domain set through the API, which turns active", async () => {
    const issuer = await eventually("the CA Issuer Ready", async () => {
      const res = await node.request("GET", `/apis/cert-manager.io/v1/namespaces/${NS}/issuers/${CA_ISSUER}`);
      return res.body.status?.conditions?.some((c: { type: string; status: string }) => c.type === "Ready" && c.status === "True") ? res.body : undefined;
    });
    expect(issuer.spec.ca.secretName).toBe(CA_ISSUER);
    const account = await call("POST", "/admin/v1/accounts", { name: "Customer", plan: "professional" }, true);
    expect(account.status).toBe(201);
    customerAccount = account.body.id;
    const path = `/admin/v1/accounts/${account.body.id}/custom-domain`;
    const set = await call("PUT", path, { domain: CUSTOM_DOMAIN }, true);
    expect({ status: set.status, body: set.body }).toMatchObject({ status: 200 });
    expect(set.body).toMatchObject({ domain: CUSTOM_DOMAIN, state: "pending_dns", dns_record: { name: CUSTOM_DOMAIN, type: "CNAME", target: DOMAIN_TARGET } });
    // The customer creates the CNAME; the portal's check sees it.
    dns!.cnames.set(CUSTOM_DOMAIN, DOMAIN_TARGET);
    const active = await eventually(
      "the domain active",
      async () => {
        const res = await call("GET", path, undefined, true);
        return res.body.state === "active" ? res.body : undefined;
      },
      180_000,
    );
    expect(active).toMatchObject({ domain: CUSTOM_DOMAIN, url: `https://${CUSTOM_DOMAIN}/preferences`, reason: null });
    expect(dns!.asked).toContain(CUSTOM_DOMAIN);

    // The objects the portal's Pod created through the API server, and what cert-manager made of them.
    const selector = encodeURIComponent("app.kubernetes.io/managed-by=emailsvc-portal");
    const certificates = (await node.request("GET", `/apis/cert-manager.io/v1/namespaces/${NS}/certificates?labelSelector=${selector}`)).body.items as any[];
    expect(certificates).toHaveLength(1);
    const certificate = certificates[0]!;
    expect(certificate.spec).toMatchObject({ dnsNames: [CUSTOM_DOMAIN], issuerRef: { name: CA_ISSUER, kind: "Issuer" } });
    expect(certificate.status.conditions.find((c: { type: string }) => c.type === "Ready")).toMatchObject({ status: "True" });
    const ingresses = (await node.request("GET", `/apis/networking.k8s.io/v1/namespaces/${NS}/ingresses?labelSelector=${selector}`)).body.items as any[];
    expect(ingresses.map((i) => i.spec.rules[0].host)).toEqual([CUSTOM_DOMAIN]);
    expect(ingresses[0].spec.tls).toEqual([{ hosts: [CUSTOM_DOMAIN], secretName: certificate.spec.secretName }]);

    const secret = await node.request("GET", `/api/v1/namespaces/${NS}/secrets/${certificate.spec.secretName}`);
    expect(secret.status).toBe(200);
    expect(secret.body.type).toBe("kubernetes.io/tls");
    // cert-manager runs with owner references on: the Secret goes with its Certificate.
    expect(secret.body.metadata.ownerReferences.map((o: { kind: string; name: string }) => `${o.kind}/${o.name}`)).toEqual([`Certificate/${certificate.metadata.name}`]);
    const leaf = new X509Certificate(Buffer.from(secret.body.data["tls.crt"], "base64"));
    const caCert = new X509Certificate(ca.cert);
    expect(leaf.subjectAltName).toBe(`DNS:${CUSTOM_DOMAIN}`);
    expect(leaf.checkIssued(caCert)).toBe(true);
    expect(leaf.verify(caCert.publicKey)).toBe(true);
    expect(Buffer.from(secret.body.data["ca.crt"], "base64").toString()).toContain(ca.cert.trim().split("\n")[1]);
  }, 240_000);

  it("serves the portal on the custom domain through the ingress controller (Traefik), with the certificate cert-manager issued", async () => {
    expect(customerAccount).not.toBe("");
    const created = await call("POST", `/admin/v1/accounts/${customerAccount}/api-keys`, { mode: "live" }, true);
    expect(created.status).toBe(201);
    const customerCall = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${gateway}${path}`, {
        method,
        headers: { "x-api-key": created.body.key, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      return { status: res.status, body: (await res.json()) as any };
    };
    const subscriber = await customerCall("POST", "/api/v1/subscribers", { email: "customer-reader@example.com" });
    expect(subscriber.status).toBe(201);
    // Links name the custom domain once the gateway has learnt it is active.
    const link = await eventually("a link on the custom domain", async () => {
      const res = await customerCall("POST", `/api/v1/subscribers/${subscriber.body.id}/preference-token`);
      return res.status === 201 && res.body.url.startsWith(`https://${CUSTOM_DOMAIN}/preferences?token=`) ? (res.body.url as string) : undefined;
    });

    // HTTPS to Traefik's port with the custom domain as SNI and Host; the certificate must verify against the test's CA for that name.
    const [address, port] = traefik!.https.split(":");
    const viaIngress = (path: string) =>
      new Promise<{ status: number; location: string; text: string; peer: X509Certificate }>((resolvePromise, reject) => {
        const req = httpsRequest(
          { host: address, port: Number(port), path, servername: CUSTOM_DOMAIN, headers: { host: CUSTOM_DOMAIN }, ca: ca.cert, agent: false },
          (res) => {
            const peer = new X509Certificate((res.socket as TLSSocket).getPeerCertificate().raw);
            let text = "";
            res.on("data", (d: Buffer) => (text += d.toString()));
            res.on("end", () => resolvePromise({ status: res.statusCode ?? 0, location: res.headers.location ?? "", text, peer }));
          },
        );
        req.on("error", reject);
        req.end();
      });
    // Traefik learns the Ingress and its Secret from the API server: poll until it routes the host.
    const first = await eventually("the custom domain routed by Traefik", async () => {
      const res = await viaIngress(`${new URL(link).pathname}${new URL(link).search}`);
      if (res.status !== 303) {
        const log = (await readFile(traefik!.logFile, "utf8").catch(() => "")).split("\n").filter((l) => / (ERR|WRN) /.test(l));
        throw new Error(`HTTP ${res.status} ${res.text.slice(0, 200)}; Traefik's log:\n${log.slice(-15).join("\n")}`);
      }
      return res;
    });
    const secretName = (await node.request("GET", `/apis/cert-manager.io/v1/namespaces/${NS}/certificates?labelSelector=${encodeURIComponent("app.kubernetes.io/managed-by=emailsvc-portal")}`)).body.items[0].spec.secretName;
    const issued = new X509Certificate(Buffer.from((await node.request("GET", `/api/v1/namespaces/${NS}/secrets/${secretName}`)).body.data["tls.crt"], "base64"));
    expect(first.peer.serialNumber).toBe(issued.serialNumber);
    const page = await viaIngress(first.location);
    expect(page.status).toBe(200);
    expect(page.text).toContain("customer-reader@example.com");
    // The rest of the portal too: a signup form's script and the double opt-in page live on the same host.
    const script = await viaIngress("/subscribe/signup.js");
    expect(script.status).toBe(200);
    expect((await viaIngress("/confirm")).status).not.toBe(404);
  }, 180_000);

  it("enforces the chart's NetworkPolicies (kube-router): an internal port only from its callers, the public ports from any Pod", async () => {
    const policies = ((await node.request("GET", `/apis/networking.k8s.io/v1/namespaces/${NS}/networkpolicies`)).body.items as any[]).map((p) => p.metadata.name);
    expect(policies.sort()).toEqual([`${RELEASE}-default-deny-ingress`, ...COMPONENT_NAMES.map((c) => `${RELEASE}-${c}`)].sort());
    // From Pods, not the host: traffic from the node itself (kubelet probes, the test's calls) passes any policy.
    const targets = {
      subscribers: `${RELEASE}-subscribers.${NS}.svc.cluster.local 50051`,
      gateway: `${RELEASE}-gateway.${NS}.svc.cluster.local 8080`,
      portal: `${RELEASE}-portal.${NS}.svc.cluster.local 8081`,
    };
    const probe = Object.entries(targets)
      .map(([name, target]) => `if nc -w 3 ${target} -e true; then echo "${name} open"; else echo "${name} closed"; fi`)
      .join("; ");
    /** A busybox Pod (restricted, no labels of the release) that tries each port once and says which it could open. */
    const prober = (namespace: string, name: string) => ({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name, namespace, labels: { role: "prober" } },
      spec: {
        restartPolicy: "Never",
        securityContext: { runAsNonRoot: true, runAsUser: 65534, runAsGroup: 65534, seccompProfile: { type: "RuntimeDefault" } },
        containers: [
          {
            name: "c",
            image: KUBE_NODE_IMAGES.busybox,
            imagePullPolicy: "Never",
            command: ["sh", "-c", probe],
            securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ["ALL"] } },
          },
        ],
      },
    });
    const OUTSIDE = "outside";
    await node.createNamespace(OUTSIDE);
    const probes = [
      { namespace: OUTSIDE, name: "prober" },
      { namespace: NS, name: "prober" },
    ];
    for (const p of probes) expect((await node.apply(prober(p.namespace, p.name))).status).toBe(201);
    for (const p of probes) {
      const phase = await node.waitForPodEnd(p.namespace, p.name);
      const log = await node.podLogs(p.namespace, p.name);
      expect({ ...p, phase, lines: log.split("\n").filter((l) => / (open|closed)$/.test(l)) }).toEqual({
        ...p,
        phase: "Succeeded",
        lines: ["subscribers closed", "gateway open", "portal open"],
      });
    }
  }, 120_000);

  it("rolls every Deployment to a new image with helm upgrade while REST calls keep succeeding", async () => {
    expect(reads).toHaveLength(4);
    const failures: string[] = [];
    let calls = 0;
    let rolling = true;
    const loop = (async () => {
      while (rolling) {
        const path = reads[calls % reads.length]!;
        calls += 1;
        const res = await call("GET", path).catch((error: Error) => ({ status: 0, body: `${error.message} ${String((error as { cause?: unknown }).cause ?? "")}` }));
        if (res.status !== 200) failures.push(`${path}: ${res.status} ${JSON.stringify(res.body)}`);
      }
    })();
    const pods = async () =>
      ((await node.request("GET", `/api/v1/namespaces/${NS}/pods?labelSelector=app.kubernetes.io/instance%3D${RELEASE}`)).body.items as any[]).map((p) => ({
        image: p.spec.containers[0].image as string,
        terminating: Boolean(p.metadata.deletionTimestamp),
      }));
    try {
      await run(helm, ["upgrade", RELEASE, CHART, "--namespace", NS, "--kubeconfig", kubeconfig, "--reuse-values", "--set", `image.tag=${next.name.split(":")[1]}`, "--wait", "--timeout", "10m"]);
      // --wait returns once the new Pods are Ready; the old ones may still be draining.
      await eventually(
        "every old Pod gone",
        async () => {
          const now = await pods();
          return now.length === COMPONENT_NAMES.length && now.every((p) => p.image === next.name && !p.terminating) ? now : undefined;
        },
        180_000,
      );
    } finally {
      rolling = false;
      await loop;
    }
    process.stdout.write(`helm.test: ${calls} calls during the roll, ${failures.length} failed\n`);
    expect(failures).toEqual([]);
    expect(calls).toBeGreaterThan(50);
    const deployments = (await node.request("GET", `/apis/apps/v1/namespaces/${NS}/deployments`)).body.items as any[];
    expect(deployments.map((d) => d.spec.template.spec.containers[0].image)).toEqual(Array(COMPONENT_NAMES.length).fill(next.name));
  }, 600_000);

  /** The campaign once it is `sent` (its REST body). */
  async function campaignSent(id: string, timeoutMs: number) {
    return eventually(
      "the campaign sent",
      async () => {
        const res = await call("GET", `/api/v1/campaigns/${id}`);
        return res.body.status === "sent" ? res.body : undefined;
      },
      timeoutMs,
    );
  }

  /** Waits until the Pod no longer exists (the API server answers 404). */
  async function podGone(pod: string, what: string) {
    await eventually(what, async () => ((await node.request("GET", `/api/v1/namespaces/${NS}/pods/${pod}`)).status === 404 ? true : undefined), 120_000);
  }

  /** A campaign of 60 to its own tag, sent, with a few messages at the sink: the delivery Pod it runs on is `victim`. */
  async function campaignUnderWay(prefix: string, tag: string, name: string) {
    const recipients = Array.from({ length: 60 }, (_, i) => `${prefix}${i}@example.com`);
    expect((await call("POST", "/api/v1/tags", { name: tag })).status).toBe(201);
    for (const email of recipients) expect((await call("POST", "/api/v1/subscribers", { email, tags: [tag], metadata: { name: email } })).status).toBe(201);
    const template = await call("POST", "/api/v1/templates", { name: tag, slug: tag, subject: name, category: "marketing", mjml_content: MJML });
    const campaign = await call("POST", "/api/v1/campaigns", { name, template_id: template.body.id, tag_filter: { include_tags: [tag] } });
    const arrived = () => recipients.reduce((n, r) => n + (sink!.recipientCounts.get(r) ?? 0), 0);
    const [victim] = await node.waitForPodsReady(NS, `app.kubernetes.io/instance=${RELEASE},app.kubernetes.io/component=delivery`);
    expect((await call("POST", `/api/v1/campaigns/${campaign.body.id}/send`)).body.total_recipients).toBe(recipients.length);
    await eventually("the campaign under way", async () => (arrived() >= 5 ? true : undefined), 120_000);
    return { recipients, campaign, arrived, victim: victim! };
  }

  it("loses and repeats nothing of a campaign when its delivery Pod is deleted in the middle", async () => {
    const { recipients, campaign, arrived, victim } = await campaignUnderWay("k", "kill", "Killed");
    // As a node drain or `kubectl delete pod` does: SIGTERM after the preStop sleep, then the drain.
    expect((await node.request("DELETE", `/api/v1/namespaces/${NS}/pods/${victim}`)).status).toBe(200);
    const atDelete = arrived();
    expect(atDelete).toBeLessThan(recipients.length);
    await podGone(victim, "the deleted Pod gone");
    const atGone = arrived();
    const done = await campaignSent(campaign.body.id, 300_000);
    expect(done.counts).toMatchObject({ total: recipients.length, sent: recipients.length, failed: 0 });
    process.stdout.write(`helm.test: delivery Pod deleted after ${atDelete} of ${recipients.length} messages, gone after ${atGone}\n`);
    expect(recipients.map((r) => sink!.recipientCounts.get(r) ?? 0)).toEqual(Array(recipients.length).fill(1));
    const pods = await node.waitForPodsReady(NS, `app.kubernetes.io/instance=${RELEASE},app.kubernetes.io/component=delivery`);
    expect(pods).not.toContain(victim);
  }, 600_000);

  it("loses nothing of a campaign when its delivery Pod is killed (SIGKILL); a second copy only of a message the relay took in the kill's window", async () => {
    const { recipients, campaign, arrived, victim } = await campaignUnderWay("h", "hard", "Hard killed");
    // gracePeriodSeconds 0: no preStop, no drain; the kubelet kills the container at once.
    expect((await node.request("DELETE", `/api/v1/namespaces/${NS}/pods/${victim}?gracePeriodSeconds=0`)).status).toBe(200);
    await podGone(victim, "the killed Pod gone");
    // What delivery had durably recorded `sent` when it died, and what the relay had taken by then.
    const client = await MongoClient.connect(mongo!.url);
    let durablySent: Set<string>;
    try {
      const emails = await client.db("delivery").collection("emails").find({ to: { $in: recipients }, status: "sent" }).project({ to: 1 }).toArray();
      durablySent = new Set(emails.map((e) => e.to as string));
    } finally {
      await client.close();
    }
    const takenAtKill = new Set(recipients.filter((r) => (sink!.recipientCounts.get(r) ?? 0) > 0));
    const done = await campaignSent(campaign.body.id, 300_000);
    expect(done.counts).toMatchObject({ total: recipients.length, sent: recipients.length, failed: 0 });
    const counts = recipients.map((r) => sink!.recipientCounts.get(r) ?? 0);
    expect(counts.filter((n) => n === 0)).toEqual([]);
    const twice = recipients.filter((r) => (sink!.recipientCounts.get(r) ?? 0) > 1);
    process.stdout.write(`helm.test: delivery Pod killed after ${takenAtKill.size} of ${recipients.length} messages (${durablySent.size} durably sent): ${twice.length} sent twice\n`);
    // RFC 5321 6.1: between the relay's 250 and delivery's own write nothing makes them one step.
    expect(twice.filter((r) => !takenAtKill.has(r) || durablySent.has(r))).toEqual([]);
    expect(counts.every((n) => n <= 2)).toBe(true);
  }, 600_000);
});
