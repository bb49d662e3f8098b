// A real single-node Kubernetes (startKubeNode of @emailsvc/testing): the
// kubelet runs Pods in containerd, the scheduler places them, kube-proxy
// routes Services, CoreDNS names them. In a namespace that enforces Pod
// Security "restricted": a compliant Pod becomes Ready through its probes, a
// Service reaches it by ClusterIP (from the host) and by DNS name (from
// another Pod), Pods reach a server on the host at the node address, a
// non-compliant Pod is refused. What the bridge CNI plugin does with a
// NetworkPolicy: nothing (tested as such); with kube-router's network policy
// controller beside it (startKubeRouter), the policy is enforced. Last, stop() leaves the host's
// links, firewall (kube-router's chains and ipsets too), mounts, cgroups and
// kernel settings as they were found; and before all that, a node whose
// process was killed (SIGKILL, with a Pod running and kube-router's rules in
// place) is cleaned up by the next start.
//
// Run with `npm run test:kube` (its own Jest project, jest.kube.config.js):
// it needs root, and changes the host while it runs.
import { execFile, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { createServer, get, type Server } from "node:http";
import { type AddressInfo } from "node:net";
import { join } from "node:path";
import { KUBE_NODE_IMAGES, startKubeNode, startKubeRouter, type KubeNode, type KubeObject, type KubeRouter } from "@emailsvc/testing";
import { eventually } from "./support/poll";

// A cold cache builds kubelet, kube-scheduler and kube-proxy with the control
// plane (10 to 20 min on 2 cores) and CoreDNS (1.5 min).
const SETUP_TIMEOUT = 50 * 60_000;
const NS = "restricted-demo";
const WORK_DIR = "/var/tmp/emailsvc-kube-node";
const TESTING = join(__dirname, "..", "..", "..", "packages", "testing", "dist", "index.js");

/**
 * Another process that starts a node with kube-router, runs a Pod under a
 * NetworkPolicy (so kube-router's chains and ipsets exist) and says "ready";
 * the test kills it with SIGKILL, as a crash or a killed Jest would end it.
 */
const CRASHING_RUN = `
const t = require(${JSON.stringify(TESTING)});
(async () => {
  const node = await t.startKubeNode();
  await t.startKubeRouter(node);
  const pod = { apiVersion: "v1", kind: "Pod", metadata: { name: "left-behind", namespace: "default", labels: { app: "left-behind" } },
    spec: { containers: [{ name: "c", image: t.KUBE_NODE_IMAGES.busybox, imagePullPolicy: "Never", command: ["sleep", "3600"] }] } };
  const res = await node.apply(pod);
  if (res.status !== 201) throw new Error("Pod not created: " + res.status);
  await node.waitForPodsReady("default", "app=left-behind");
  // A policy that names the Pod as its own caller: kube-router puts its address in an ipset.
  const policy = { apiVersion: "networking.k8s.io/v1", kind: "NetworkPolicy", metadata: { name: "self", namespace: "default" },
    spec: { podSelector: { matchLabels: { app: "left-behind" } }, ingress: [{ from: [{ podSelector: { matchLabels: { app: "left-behind" } } }] }] } };
  if ((await node.apply(policy)).status !== 201) throw new Error("NetworkPolicy not created");
  for (let i = 0; !require("node:child_process").execFileSync("ipset", ["list", "-n"]).toString().includes("KUBE-SRC-"); i++) {
    if (i > 100) throw new Error("kube-router made no ipset");
    await new Promise((r) => setTimeout(r, 200));
  }
  process.stdout.write("ready\\n");
  setInterval(() => {}, 1 << 30);
})().catch((e) => { console.error(e); process.exit(1); });
`;

/** Runs CRASHING_RUN until it says "ready", then kills it with SIGKILL. */
function startAndKill(): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["-e", CRASHING_RUN], { stdio: ["ignore", "pipe", "pipe"] });
    let err = "";
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    child.stdout.on("data", (d: Buffer) => {
      if (d.toString().includes("ready")) child.kill("SIGKILL");
    });
    child.on("exit", (_code, signal) => (signal === "SIGKILL" ? resolve() : reject(new Error(`the crashing run ended by itself:\n${err}`))));
  });
}

const run = (command: string, args: string[]): Promise<string> =>
  new Promise((resolve) => execFile(command, args, { maxBuffer: 16 * 1024 * 1024 }, (_error, stdout) => resolve(stdout ?? "")));


/**
 * The host state the node touches, limited to its own kinds of things (other
 * work on the machine may add links or mounts of its own meanwhile).
 */
async function hostState(): Promise<Record<string, unknown>> {
  const links = (await run("ip", ["-br", "link"]))
    .split("\n")
    .map((l) => l.split(/\s+/)[0]!.split("@")[0]!)
    .filter((l) => /^(esvc-|veth)/.test(l));
  const firewall: Record<string, string[]> = {};
  for (const tool of ["iptables-save", "ip6tables-save"]) {
    // Tables and rules (counters dropped), and every chain of kube-proxy, the kubelet or the CNI plugins.
    firewall[tool] = (await run(tool, []))
      .split("\n")
      .filter((l) => l.startsWith("*") || l.startsWith("-A ") || /^:(KUBE|CNI)-/.test(l));
  }
  // kube-router's (the set names are its prefixes).
  const ipsets = (await run("ipset", ["list", "-n"])).split("\n").filter((name) => /KUBE-/.test(name));
  // And the kit's own nft table beside kube-router (startKubeRouter).
  const nftTables = (await run("nft", ["list", "tables"])).split("\n").filter((table) => table.includes("emailsvc-"));
  const mounts = (await readFile("/proc/self/mountinfo", "utf8"))
    .split("\n")
    .map((l) => l.split(" ")[4] ?? "")
    .filter((m) => m.startsWith(WORK_DIR) || m.includes("/netns/cni-") || m.startsWith("/run/containerd"));
  const cgroups: string[] = [];
  for (const hierarchy of await readdir("/sys/fs/cgroup")) {
    for (const name of ["kubepods", "k8s.io"]) if (existsSync(join("/sys/fs/cgroup", hierarchy, name))) cgroups.push(`${hierarchy}/${name}`);
  }
  const sysctls: Record<string, string> = {};
  for (const name of ["net/ipv4/ip_forward", "net/ipv4/conf/all/route_localnet", "net/bridge/bridge-nf-call-iptables", "vm/overcommit_memory", "kernel/panic", "kernel/panic_on_oops"]) {
    sysctls[name] = (await readFile(join("/proc/sys", name), "utf8").catch(() => "absent")).trim();
  }
  const paths = ["/var/lib/kubelet", "/var/lib/cni", "/var/log/pods", "/var/log/containers", "/run/containerd", WORK_DIR].filter((p) => existsSync(p));
  const processes: string[] = [];
  for (const pid of await readdir("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    const cmd = (await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "")).split("\0").join(" ");
    if (cmd.includes(WORK_DIR)) processes.push(cmd.slice(0, 120));
  }
  return { links, firewall, ipsets, nftTables, mounts, cgroups, sysctls, paths, processes };
}

/** What Pod Security "restricted" asks of a Pod and of each container. */
const restrictedPod = {
  securityContext: { runAsNonRoot: true, runAsUser: 65534, runAsGroup: 65534, seccompProfile: { type: "RuntimeDefault" } },
};
const restrictedContainer = {
  image: KUBE_NODE_IMAGES.busybox,
  imagePullPolicy: "Never",
  securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ["ALL"] } },
};

/** A Pod that sends one HTTP request with busybox nc and prints the answer (`tries` times until nc succeeds, 1 s apart). */
const clientPod = (name: string, host: string, port: number | string, path: string, tries = 1): KubeObject => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name, namespace: NS, labels: { role: "client" } },
  spec: {
    ...restrictedPod,
    restartPolicy: "Never",
    containers: [
      {
        ...restrictedContainer,
        name: "client",
        command: [
          "sh",
          "-c",
          `for i in $(seq ${tries}); do printf 'GET ${path} HTTP/1.0\\r\\nHost: test\\r\\n\\r\\n' | nc -w 5 ${host} ${port} && exit 0; sleep 1; done; exit 1`,
        ],
      },
    ],
  },
});

describe("a real single-node Kubernetes (startKubeNode)", () => {
  let node: KubeNode;
  let kubeRouter: KubeRouter | undefined;
  let before: Record<string, unknown>;

  let leftBehind: Record<string, unknown>;
  let cleanedUp: Record<string, unknown>;

  beforeAll(async () => {
    before = await hostState();
    await startAndKill();
    leftBehind = await hostState();
    // Recorded once the machine is the node's: after the kit removed what the
    // killed run left, before it changes anything.
    node = await startKubeNode({ beforeStart: async () => void (cleanedUp = await hostState()) });
    const created = await node.request("POST", "/api/v1/namespaces", {
      body: {
        apiVersion: "v1",
        kind: "Namespace",
        metadata: { name: NS, labels: { "pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest" } },
      },
    });
    expect(created.status).toBe(201);
    // Pods need the namespace's default ServiceAccount (made by the controller manager).
    await eventually("the default ServiceAccount", async () =>
      (await node.request("GET", `/api/v1/namespaces/${NS}/serviceaccounts/default`)).status === 200 ? true : undefined,
    );
  }, SETUP_TIMEOUT);

  afterAll(async () => {
    await kubeRouter?.stop();
    await node?.stop();
  }, 120_000);

  it("cleans up at start after a node whose process was killed with a Pod running", () => {
    // The killed run's reapers stop its programs, but not containerd's shims
    // nor the Pod's processes, its network or its mounts.
    expect(leftBehind.links).toEqual(expect.arrayContaining(["esvc-node0", "esvc-cni0"]));
    expect(leftBehind.processes).toEqual(expect.arrayContaining([expect.stringContaining("containerd-shim")]));
    expect(leftBehind.cgroups).not.toEqual([]);
    expect((leftBehind.firewall as Record<string, string[]>)["iptables-save"]).toEqual(expect.arrayContaining([expect.stringMatching(/^:KUBE-ROUTER-FORWARD /)]));
    expect(leftBehind.ipsets).toEqual(expect.arrayContaining([expect.stringMatching(/^KUBE-SRC-/)]));
    expect(leftBehind.nftTables).toEqual(["table ip emailsvc-no-endpoints"]);
    expect(cleanedUp).toEqual(before);
  });

  it("registers the node Ready, with the kit's images in containerd", async () => {
    const res = await node.request("GET", `/api/v1/nodes/${node.nodeName}`);
    expect(res.status).toBe(200);
    const ready = res.body.status.conditions.find((c: { type: string }) => c.type === "Ready");
    expect(ready.status).toBe("True");
    expect(res.body.status.addresses).toContainEqual({ type: "InternalIP", address: node.nodeAddress });
    expect(res.body.status.nodeInfo.kubeletVersion).toBe("v1.31.4");
    const imageNames = (res.body.status.images as { names: string[] }[]).flatMap((i) => i.names);
    expect(imageNames).toEqual(expect.arrayContaining([KUBE_NODE_IMAGES.pause, KUBE_NODE_IMAGES.busybox]));
  });

  it("runs a restricted Pod Ready through its HTTP and exec probes, reached through a Service by ClusterIP and by DNS name", async () => {
    const deployment: KubeObject = {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "web", namespace: NS },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: "web" } },
        template: {
          metadata: { labels: { app: "web" } },
          spec: {
            ...restrictedPod,
            containers: [
              {
                ...restrictedContainer,
                name: "web",
                command: ["httpd", "-f", "-p", "8080", "-h", "/www"],
                ports: [{ containerPort: 8080 }],
                readinessProbe: { httpGet: { path: "/index.html", port: 8080 }, periodSeconds: 1 },
                livenessProbe: { exec: { command: ["cat", "/www/index.html"] }, periodSeconds: 5 },
              },
            ],
          },
        },
      },
    };
    const service: KubeObject = {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "web", namespace: NS },
      spec: { selector: { app: "web" }, ports: [{ port: 80, targetPort: 8080 }] },
    };
    const applied = await node.apply(deployment);
    expect(applied.status).toBe(201);
    expect(applied.warnings).toEqual([]);
    expect((await node.apply(service)).status).toBe(201);

    const [pod] = await node.waitForPodsReady(NS, "app=web");
    const status = (await node.request("GET", `/api/v1/namespaces/${NS}/pods/${pod}`)).body.status;
    expect(status.podIP).toMatch(/^10\.244\.0\./);
    expect(status.containerStatuses[0].ready).toBe(true);

    // From the host through kube-proxy's rules (which follow the Service within a second or so).
    const clusterIP = (await node.request("GET", `/api/v1/namespaces/${NS}/services/web`)).body.spec.clusterIP as string;
    const body = await eventually("the Service's ClusterIP from the host", () => httpGet(`http://${clusterIP}/index.html`)).catch(
      async (error: Error) => {
        // What kube-proxy made of the Service, for a failure here.
        const rules = (await run("iptables-save", ["-t", "nat"])).split("\n").filter((l) => l.includes(clusterIP) || l.includes("KUBE-SEP"));
        const proxyLog = node.logFiles.find((f) => f.endsWith("kube-proxy.log"))!;
        const log = (await readFile(proxyLog, "utf8").catch(() => "")).split("\n").slice(-30);
        throw new Error(`${error.message}\n${rules.join("\n")}\n--- kube-proxy ---\n${log.join("\n")}`);
      },
    );
    expect(body).toBe("hello from a Pod\n");

    // From another Pod, by the Service's DNS name (CoreDNS at the node address).
    expect((await node.apply(clientPod("by-dns", `web.${NS}.svc.cluster.local`, 80, "/index.html"))).status).toBe(201);
    expect(await node.waitForPodEnd(NS, "by-dns")).toBe("Succeeded");
    const logs = await node.podLogs(NS, "by-dns");
    expect(logs).toMatch(/^HTTP\/1\.[01] 200/);
    expect(logs).toContain("hello from a Pod");
  }, 180_000);

  it("lets Pods reach a server on the host at the node address", async () => {
    const seen: string[] = [];
    const server: Server = createServer((req, res) => {
      seen.push(req.socket.remoteAddress ?? "");
      res.end("hello from the host\n");
    });
    await new Promise<void>((resolve) => server.listen(0, node.nodeAddress, resolve));
    try {
      const port = (server.address() as AddressInfo).port;
      expect((await node.apply(clientPod("to-host", node.nodeAddress, port, "/"))).status).toBe(201);
      expect(await node.waitForPodEnd(NS, "to-host")).toBe("Succeeded");
      expect(await node.podLogs(NS, "to-host")).toContain("hello from the host");
      // From the Pod's own address: no masquerading on the way.
      expect(seen).toHaveLength(1);
      expect(seen[0]).toMatch(/^10\.244\.0\./);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  }, 120_000);

  it("publishes the API server at the node address as the `kubernetes` Service, which Pods reach", async () => {
    // The API server listens on the node address and writes it as the Service's endpoint (its --advertise-address).
    const apiPort = Number(new URL(node.server).port);
    expect(new URL(node.server).hostname).toBe(node.nodeAddress);
    const slices = await node.request("GET", "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3Dkubernetes");
    expect(slices.body.items.map((s: any) => ({ addresses: s.endpoints.map((e: any) => e.addresses).flat(), ports: s.ports.map((p: any) => p.port) }))).toEqual([
      { addresses: [node.nodeAddress], ports: [apiPort] },
    ]);
    // A Pod reaches it through the Service's ClusterIP on 443, as in-cluster clients do
    // (KUBERNETES_SERVICE_HOST): plain HTTP there gets the answer of Go's HTTPS server. Busybox's TLS
    // client fails the handshake with it: the call with a ServiceAccount token is in helm.test.ts,
    // from the project's image.
    const pod = clientPod("to-api", "$KUBERNETES_SERVICE_HOST", "$KUBERNETES_SERVICE_PORT", "/");
    expect((await node.apply(pod)).status).toBe(201);
    expect(await node.waitForPodEnd(NS, "to-api")).toBe("Succeeded");
    expect(await node.podLogs(NS, "to-api")).toContain("Client sent an HTTP request to an HTTPS server");
    const service = await node.request("GET", "/api/v1/namespaces/default/services/kubernetes");
    expect(service.body.spec).toMatchObject({ clusterIP: "10.96.0.1", ports: [expect.objectContaining({ port: 443, targetPort: apiPort })] });
  }, 120_000);

  it("refuses a Pod that breaks Pod Security restricted, and creates nothing", async () => {
    const res = await node.request("POST", `/api/v1/namespaces/${NS}/pods`, {
      body: {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "as-root" },
        spec: { containers: [{ name: "c", image: KUBE_NODE_IMAGES.busybox, imagePullPolicy: "Never", command: ["sleep", "60"] }] },
      },
    });
    expect(res.status).toBe(403);
    expect(res.body.message).toContain('violates PodSecurity "restricted:latest"');
    expect(res.body.message).toContain("runAsNonRoot != true");
    expect((await node.request("GET", `/api/v1/namespaces/${NS}/pods/as-root`)).status).toBe(404);
  });

  it("accepts a NetworkPolicy, which the bridge CNI plugin does not enforce: traffic it denies still flows", async () => {
    const denyAll: KubeObject = {
      apiVersion: "networking.k8s.io/v1",
      kind: "NetworkPolicy",
      metadata: { name: "deny-all-ingress", namespace: NS },
      spec: { podSelector: {}, policyTypes: ["Ingress"] },
    };
    expect((await node.apply(denyAll)).status).toBe(201);
    expect((await node.apply(clientPod("denied", `web.${NS}.svc.cluster.local`, 80, "/index.html"))).status).toBe(201);
    expect(await node.waitForPodEnd(NS, "denied")).toBe("Succeeded");
    // With an enforcing plugin (Calico, Cilium, kube-router) this would time out.
    expect(await node.podLogs(NS, "denied")).toContain("hello from a Pod");
  }, 120_000);

  it("enforces the NetworkPolicy once kube-router's network policy controller runs beside the bridge plugin", async () => {
    kubeRouter = await startKubeRouter(node);
    // The deny-all policy above, now enforced: refused at once (kube-router rejects), so nc fails and the Pod with it.
    expect((await node.apply(clientPod("refused", `web.${NS}.svc.cluster.local`, 80, "/index.html"))).status).toBe(201);
    expect(await node.waitForPodEnd(NS, "refused")).toBe("Failed");
    expect(await node.podLogs(NS, "refused")).not.toContain("hello from a Pod");
    // A policy that lets the clients in (by their label): kube-router adds a new Pod's address to the
    // policy's ipset once the Pod has one, so the client tries a few times.
    const allowClients: KubeObject = {
      apiVersion: "networking.k8s.io/v1",
      kind: "NetworkPolicy",
      metadata: { name: "allow-clients", namespace: NS },
      spec: { podSelector: { matchLabels: { app: "web" } }, policyTypes: ["Ingress"], ingress: [{ from: [{ podSelector: { matchLabels: { role: "client" } } }] }] },
    };
    expect((await node.apply(allowClients)).status).toBe(201);
    expect((await node.apply(clientPod("allowed", `web.${NS}.svc.cluster.local`, 80, "/index.html", 10))).status).toBe(201);
    expect(await node.waitForPodEnd(NS, "allowed")).toBe("Succeeded");
    expect(await node.podLogs(NS, "allowed")).toContain("hello from a Pod");
  }, 120_000);

  it("stops: Pods deleted, processes gone, the host as it was found", async () => {
    const during = await hostState();
    // While running, the node's traces are visible to the same checks.
    expect(during.links).toEqual(expect.arrayContaining(["esvc-node0", "esvc-cni0"]));
    expect(during.processes).not.toEqual([]);
    expect(await run("conntrack", ["-L", "-s", "10.244.0.0/24"])).not.toBe("");
    await kubeRouter?.stop();
    await node.stop();
    expect(await hostState()).toEqual(before);
    expect(await run("conntrack", ["-L", "-s", "10.244.0.0/24"])).toBe("");
  }, 120_000);
});

/** The body of a 200 answer; rejects (with why) otherwise. */
function httpGet(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    // A fresh connection each time: a kept-alive one opened before kube-proxy knew the Service may lead elsewhere.
    const req = get(url, { timeout: 2000, agent: false }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (text += chunk));
      res.on("end", () => (res.statusCode === 200 ? resolve(text) : reject(new Error(`HTTP ${res.statusCode}`))));
    });
    req.on("timeout", () => req.destroy(new Error(`${url} timed out`)));
    req.on("error", reject);
  });
}
