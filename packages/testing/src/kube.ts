import { createHash, generateKeyPairSync, randomBytes, X509Certificate } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { Agent, request as httpsRequest } from "node:https";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseAllDocuments } from "yaml";
import { ensureCachedDir } from "./cache.js";
import { buildGoPrograms, goModDownload } from "./go-build.js";
import { info, seconds } from "./log.js";
import { freePort } from "./ports.js";
import { type ManagedProcess, runCapture, startProcess, waitUntilReady } from "./proc.js";

/**
 * A real Kubernetes control plane for tests, without Docker or nodes:
 * etcd (Debian's etcd-server), kube-apiserver and, when asked,
 * kube-controller-manager, both built from the Go module proxy into the cache.
 * There is no kubelet here, so Pods are admitted and stay Pending; the node
 * (kubelet, kube-scheduler, kube-proxy, built by the same build) is
 * kube-node.ts.
 */
export const KUBE_VERSION = "v1.31.4";
/** The staging modules (k8s.io/api, client-go, ...) are versioned v0.<minor>.<patch>. */
const KUBE_STAGING_VERSION = KUBE_VERSION.replace(/^v1\./, "v0.");
/** cert-manager whose CRDs `applyCrds("cert-manager")` installs. */
export const CERT_MANAGER_VERSION = "v1.21.2";
const CERT_MANAGER_MODULE = "github.com/cert-manager/cert-manager";
const CERT_MANAGER_CACHE_NAME = `cert-manager-crds-${CERT_MANAGER_VERSION}`;
/** The field manager of the objects the kit writes. */
const FIELD_MANAGER = "emailsvc-testing";
const SERVICE_CLUSTER_IP_RANGE = "10.96.0.0/16";
const SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local";

export interface KubeCluster {
  /** `https://127.0.0.1:<port>`, or with a node `https://<node address>:<port>` */
  server: string;
  /** PEM of the CA that signed the API server's (self-signed) serving certificate. */
  caData: string;
  /** Bearer token of a user in system:masters. */
  adminToken: string;
  /** kubeconfig YAML for that token (default: the admin's), with `namespace` as the context's namespace. */
  kubeconfig(token?: string, namespace?: string): string;
  /** The same kubeconfig written to a file (mode 0600) in the cluster's run directory; returns its path. */
  kubeconfigFile(token?: string, namespace?: string): Promise<string>;
  /** Creates a namespace; if it exists, sets the labels on it. */
  createNamespace(name: string, labels?: Record<string, string>): Promise<void>;
  /** Creates the ServiceAccount if missing and returns a fresh token of it (TokenRequest, 1 h). */
  serviceAccountToken(namespace: string, name: string): Promise<string>;
  /** Installs the CRDs and waits until each is Established. */
  applyCrds(kind: "cert-manager"): Promise<void>;
  /**
   * One call to the API server (admin token unless `token` is given). JSON in
   * and out; never throws for an HTTP status, so that tests can assert 403s.
   */
  request<T = any>(method: string, path: string, options?: KubeRequestOptions): Promise<KubeResponse<T>>;
  /**
   * Server-side apply of one object (PATCH application/apply-patch+yaml,
   * force); returns the response. The kind's resource comes from discovery; a
   * namespaced object needs metadata.namespace, a cluster-scoped one has it dropped.
   */
  apply<T = any>(object: KubeObject, options?: { token?: string; fieldManager?: string }): Promise<KubeResponse<T>>;
  /**
   * With startKubeCluster({node}): the kubelet's token (user
   * `system:node:<name>` in `system:nodes`, what the Node authorizer and the
   * NodeRestriction admission plugin expect of a kubelet).
   */
  nodeToken?: string;
  /** Whether the controller manager runs (startKubeCluster({controllerManager: true})). */
  readonly controllerManager: boolean;
  /** Log files of etcd, the API server and the controller manager, for failing tests. */
  readonly logFiles: readonly string[];
  stop(): Promise<void>;
}

export interface KubeRequestOptions {
  /** Bearer token; default the admin's. */
  token?: string;
  /** Sent as JSON (or as is when a string). */
  body?: unknown;
  /** Default application/json; e.g. application/apply-patch+yaml, application/merge-patch+json. */
  contentType?: string;
}

export interface KubeResponse<T = any> {
  status: number;
  /** Parsed JSON, or the text when the body is no JSON. */
  body: T;
  /** The texts of the response's Warning headers (e.g. PodSecurity in `warn` mode, deprecated APIs). */
  warnings: string[];
}

/** The least an object needs for {@link KubeCluster.apply}. */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; [key: string]: unknown };
  [key: string]: unknown;
}

/** Where the repository's scripts are, from packages/testing/dist (or src under ts-jest/swc). */
const REPO_ROOT = resolve(__dirname, "..", "..", "..");

/**
 * etcd: EMAILSVC_ETCD_BIN, else `etcd` on PATH, else Debian's etcd-server
 * installed by scripts/etcd/install.sh (apt-get, as root or with sudo).
 */
async function findEtcd(): Promise<string> {
  const script = join(REPO_ROOT, "scripts", "etcd", "install.sh");
  if (!existsSync(script)) throw new Error(`no ${script}: cannot find or install etcd`);
  const out = await runCapture("bash", [script], { timeoutMs: 10 * 60_000 });
  return out.trim().split("\n").pop() ?? "etcd";
}

/**
 * The wrapper module: requires k8s.io/kubernetes and pins each of its staging
 * modules (k8s.io/api, k8s.io/client-go, ...), which its go.mod replaces with
 * ./staging directories that a module dependency cannot use. The list comes
 * from that go.mod, so a version bump needs no edit here.
 */
function wrapperGoMod(kubernetesGoMod: string): string {
  const staging = [...kubernetesGoMod.matchAll(/^\s*(k8s\.io\/[\w.-]+)\s+=>\s+\.\/staging\//gm)].map((m) => m[1]!);
  if (staging.length < 20) throw new Error(`found only ${staging.length} staging modules in k8s.io/kubernetes' go.mod`);
  return [
    "// Generated by @emailsvc/testing (packages/testing/src/kube.ts): builds the",
    "// control-plane binaries of the tests' Kubernetes API server.",
    "module emailsvc.local/kube",
    "",
    "go 1.22.0",
    "",
    `require k8s.io/kubernetes ${KUBE_VERSION}`,
    "",
    "replace (",
    ...staging.map((name) => `\t${name} => ${name} ${KUBE_STAGING_VERSION}`),
    ")",
    "",
  ].join("\n");
}

const mainGo = (pkg: string, constructor: string): string => `// Generated by @emailsvc/testing.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"${pkg}"
)

func main() { os.Exit(cli.Run(app.${constructor}())) }
`;

/** kubelet's cli.RunNoErrOutput returns an error (it prints none itself), not an exit code. */
const kubeletMainGo = `// Generated by @emailsvc/testing.
package main

import (
	"fmt"
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kubelet/app"
)

func main() {
	if err := cli.RunNoErrOutput(app.NewKubeletCommand()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
`;

/**
 * The binaries of the one build, with the main.go of each: the control plane
 * (startKubeCluster) and the node (startKubeNode in kube-node.ts).
 */
const KUBE_COMMANDS: Record<string, string> = {
  "kube-apiserver": mainGo("k8s.io/kubernetes/cmd/kube-apiserver/app", "NewAPIServerCommand"),
  "kube-controller-manager": mainGo("k8s.io/kubernetes/cmd/kube-controller-manager/app", "NewControllerManagerCommand"),
  "kube-scheduler": mainGo("k8s.io/kubernetes/cmd/kube-scheduler/app", "NewSchedulerCommand"),
  "kube-proxy": mainGo("k8s.io/kubernetes/cmd/kube-proxy/app", "NewProxyCommand"),
  kubelet: kubeletMainGo,
};

/**
 * The cache folder's name: the version and a digest of the generated sources,
 * so that adding a binary (or changing a main.go) builds a new folder instead
 * of finding an old one without it.
 */
const KUBE_CACHE_NAME = `kubernetes-${KUBE_VERSION}-${createHash("sha256")
  .update(JSON.stringify(Object.entries(KUBE_COMMANDS)))
  .digest("hex")
  .slice(0, 8)}`;

/**
 * Builds kube-apiserver, kube-controller-manager, kube-scheduler, kube-proxy
 * and kubelet (once) into `<cache>/kubernetes-<version>-<digest>/bin`. All main
 * packages live in one module and one `go build`, so they share the compile of
 * the ~2,000 packages they have in common. The control plane alone took about
 * 10 CPU minutes with cold Go caches (402 to 914 s of wall clock measured on 2
 * shared cores); the node's three binaries add about 6 minutes cold. With a
 * warm Go build cache the five take about a minute (63 s measured), mostly
 * linking. build.json in the folder records the times.
 */
async function prepareKubeBinaries(): Promise<{ bin: string; built: boolean; ms: number }> {
  const version = "k8s.io/component-base/version";
  return buildGoPrograms(
    {
      name: `kubernetes-${KUBE_VERSION}`,
      what: `${Object.keys(KUBE_COMMANDS).join(", ")} ${KUBE_VERSION}`,
      coldEstimate: "10 to 20 min",
      files: async (work) => {
        const { GoMod } = await goModDownload("k8s.io/kubernetes", KUBE_VERSION, work);
        const files: Record<string, string> = { "go.mod": wrapperGoMod(await readFile(GoMod, "utf8")) };
        for (const [command, source] of Object.entries(KUBE_COMMANDS)) files[`cmd/${command}/main.go`] = source;
        return files;
      },
      packages: ["./cmd/..."],
      // The version the binaries report (/version, --version): a module build
      // has no git tree to derive it from. -X only touches the link step.
      ldflags: [
        `-X ${version}.gitVersion=${KUBE_VERSION}`,
        `-X ${version}.gitMajor=1`,
        `-X ${version}.gitMinor=${KUBE_VERSION.split(".")[1]}`,
        `-X ${version}.gitTreeState=clean`,
      ].join(" "),
    },
    KUBE_CACHE_NAME,
  );
}

/**
 * cert-manager's CRDs, from its Go module: `deploy/crds/*.yaml` of the module
 * zip, the controller-gen output whose specs the release's Helm chart wraps in
 * templates (same spec, plus Helm labels). Copied into the cache so that a
 * cleaned Go module cache does not break the tests.
 */
async function prepareCertManagerCrds(): Promise<{ dir: string; built: boolean; ms: number }> {
  const started = Date.now();
  const { dir, built } = await ensureCachedDir(CERT_MANAGER_CACHE_NAME, async (tmp) => {
    const downloaded = JSON.parse(
      await runCapture("go", ["mod", "download", "-json", `${CERT_MANAGER_MODULE}@${CERT_MANAGER_VERSION}`], {
        cwd: tmp,
        timeoutMs: 10 * 60_000,
      }),
    ) as { Dir?: string; Error?: string };
    if (!downloaded.Dir) throw new Error(`go mod download gave no directory: ${downloaded.Error ?? "unknown error"}`);
    const from = join(downloaded.Dir, "deploy", "crds");
    const files = (await readdir(from)).filter((f) => f.endsWith(".yaml"));
    if (files.length < 6) throw new Error(`expected cert-manager's 6 CRDs in ${from}, found ${files.join(", ")}`);
    for (const file of files) await writeFile(join(tmp, file), await readFile(join(from, file)));
  });
  return { dir, built, ms: Date.now() - started };
}

export interface KubePrepared {
  etcd: string;
  bin: string;
  crds: string;
  built: boolean;
  ms: number;
}

let preparing: Promise<KubePrepared> | undefined;

/** Builds or finds everything startKubeCluster needs, without starting anything. */
export function prepareKube(): Promise<KubePrepared> {
  preparing ??= (async () => {
    const started = Date.now();
    const [etcd, binaries, crds] = await Promise.all([findEtcd(), prepareKubeBinaries(), prepareCertManagerCrds()]);
    return { etcd, bin: binaries.bin, crds: crds.dir, built: binaries.built || crds.built, ms: Date.now() - started };
  })();
  // A failed attempt may be retried (e.g. after installing Go).
  preparing.catch(() => (preparing = undefined));
  return preparing;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** One HTTPS call with a CA of our own (fetch cannot take one without undici's Agent). */
function call(
  agent: Agent,
  url: string,
  method: string,
  headers: Record<string, string>,
  body?: string,
): Promise<{ status: number; text: string; warnings: string[] }> {
  return new Promise((resolvePromise, reject) => {
    const req = httpsRequest(url, { method, agent, headers, timeout: 30_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      // rawHeaders keeps each Warning header apart (headers.warning would join them with commas).
      const warnings: string[] = [];
      for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) {
        if (res.rawHeaders[i]!.toLowerCase() === "warning") warnings.push(res.rawHeaders[i + 1]!.replace(/^299 - "(.*)"$/, "$1"));
      }
      res.on("end", () => resolvePromise({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8"), warnings }));
      res.on("error", reject);
    });
    req.on("timeout", () => req.destroy(new Error(`${method} ${url} timed out`)));
    req.on("error", reject);
    req.end(body);
  });
}

/** The self-signed CA among the PEM certificates of the serving certificate file. */
function caOf(pemBundle: string): string {
  const pems = pemBundle.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (pems.length === 0) return "";
  const ca = pems.find((pem) => {
    const cert = new X509Certificate(pem);
    return cert.ca && cert.subject === cert.issuer;
  });
  return `${ca ?? pems[pems.length - 1]}\n`;
}

const b64 = (s: string): string => Buffer.from(s).toString("base64");
const q = (s: string): string => JSON.stringify(s); // a JSON string is a YAML scalar

export interface KubeClusterOptions {
  controllerManager?: boolean;
  /**
   * The one node that will register (kube-node.ts): its name gets a kubelet
   * token, the API server advertises the node's address (the `kubernetes`
   * Service's) and reaches kubelets by their InternalIP (a test node's name
   * resolves nowhere).
   */
  node?: { name: string; address: string };
}

/**
 * Starts etcd and kube-apiserver (and kube-controller-manager when asked) on
 * free ports of 127.0.0.1 with data in a temporary directory, and waits until
 * the API server's /readyz is ok (and, with the controller manager, until the
 * `default` ServiceAccount of the `default` namespace exists, which proves
 * its controllers run). Builds the binaries first if the cache lacks them.
 */
export async function startKubeCluster(opts: KubeClusterOptions = {}): Promise<KubeCluster> {
  const prepared = await prepareKube();
  const started = Date.now();
  const runDir = await mkdtemp(join(tmpdir(), "emailsvc-kube-"));
  const procs: ManagedProcess[] = [];
  const stopAll = async (): Promise<void> => {
    // Reverse order: the controller manager, then the API server, then etcd.
    for (const p of [...procs].reverse()) await p.stop(10_000);
    await rm(runDir, { recursive: true, force: true });
  };
  let agent: Agent | undefined;
  try {
    // etcd
    const [etcdPort, peerPort, apiPort, cmPort] = await Promise.all([freePort(), freePort(), freePort(opts.node?.address), freePort()]);
    const etcdUrl = `http://127.0.0.1:${etcdPort}`;
    const etcd = startProcess({
      command: prepared.etcd,
      args: [
        "--name=test",
        `--data-dir=${join(runDir, "etcd")}`,
        `--listen-client-urls=${etcdUrl}`,
        `--advertise-client-urls=${etcdUrl}`,
        `--listen-peer-urls=http://127.0.0.1:${peerPort}`,
        `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
        `--initial-cluster=test=http://127.0.0.1:${peerPort}`,
        // Test data: no fsync per write (the API server writes a lot at start).
        "--unsafe-no-fsync",
        "--logger=zap",
        "--log-level=warn",
      ],
      cwd: runDir,
      // The Debian package's /etc/default/etcd may set ETCD_* defaults: keep them out.
      env: Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("ETCD_"))),
      logFile: join(runDir, "etcd.log"),
      // Removed when etcd, the last to stop, has stopped (or by the reaper if we die).
      cleanupDirs: [runDir],
    });
    procs.push(etcd);

    // Credentials: a static admin token in system:masters, and the key pair that
    // signs (controller manager, TokenRequest) and verifies ServiceAccount tokens.
    const adminToken = randomBytes(24).toString("hex");
    const nodeToken = opts.node ? randomBytes(24).toString("hex") : undefined;
    const nodeUser = opts.node ? `system:node:${opts.node.name}` : "";
    const tokens = [`${adminToken},admin,admin,"system:masters"`, ...(nodeToken ? [`${nodeToken},${nodeUser},${nodeUser},"system:nodes"`] : [])];
    await writeFile(join(runDir, "tokens.csv"), `${tokens.join("\n")}\n`, { mode: 0o600 });
    const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
    await writeFile(join(runDir, "sa.key"), privateKey.export({ type: "pkcs8", format: "pem" }), { mode: 0o600 });
    await writeFile(join(runDir, "sa.pub"), publicKey.export({ type: "spki", format: "pem" }));

    await waitUntilReady("etcd", etcd, async () => (await fetch(`${etcdUrl}/health`)).ok, 60_000);

    const certDir = join(runDir, "certs");
    // With a node, the API server listens on the node's address, where Pods
    // reach it through the `kubernetes` Service (kube-proxy translates its
    // ClusterIP to the endpoint the API server writes for its advertise
    // address); the host reaches that address too. Without one, loopback only.
    const bindAddress = opts.node?.address ?? "127.0.0.1";
    const apiserver = startProcess({
      command: join(prepared.bin, "kube-apiserver"),
      args: [
        `--etcd-servers=${etcdUrl}`,
        `--bind-address=${bindAddress}`,
        `--secure-port=${apiPort}`,
        // Self-signed serving certificate: a CA, and a certificate for the
        // advertise address, the `kubernetes` Service's ClusterIP, localhost
        // and kubernetes.default.svc.
        `--cert-dir=${certDir}`,
        `--advertise-address=${bindAddress}`,
        // Without a node, no Pod calls the API server, and a loopback address
        // is refused as an endpoint of the `kubernetes` Service: none is written.
        ...(opts.node ? [] : ["--endpoint-reconciler-type=none"]),
        ...(opts.node ? ["--kubelet-preferred-address-types=InternalIP"] : []),
        `--token-auth-file=${join(runDir, "tokens.csv")}`,
        "--authorization-mode=Node,RBAC",
        `--service-account-issuer=${SERVICE_ACCOUNT_ISSUER}`,
        `--service-account-key-file=${join(runDir, "sa.pub")}`,
        `--service-account-signing-key-file=${join(runDir, "sa.key")}`,
        `--service-cluster-ip-range=${SERVICE_CLUSTER_IP_RANGE}`,
        // Admission plugins: the defaults (PodSecurity, ServiceAccount, ...).
        "--profiling=false",
        "--v=1",
      ],
      cwd: runDir,
      logFile: join(runDir, "kube-apiserver.log"),
    });
    procs.push(apiserver);

    // The serving certificate is written before the port opens; its CA is what clients trust.
    // Written as two files: wait until both are there and the certificate file is complete.
    const servingCert = join(certDir, "apiserver.crt");
    let caData = "";
    await waitUntilReady(
      "kube-apiserver (serving certificate)",
      apiserver,
      async () => {
        if (!existsSync(join(certDir, "apiserver.key")) || !existsSync(servingCert)) return false;
        caData = caOf(await readFile(servingCert, "utf8"));
        return caData.includes("END CERTIFICATE");
      },
      60_000,
    );
    await writeFile(join(runDir, "ca.crt"), caData);
    agent = new Agent({ ca: caData, keepAlive: true });
    const server = `https://${bindAddress}:${apiPort}`;
    const clientAgent = agent;

    const request = async <T = any>(method: string, path: string, options: KubeRequestOptions = {}): Promise<KubeResponse<T>> => {
      const headers: Record<string, string> = {
        authorization: `Bearer ${options.token ?? adminToken}`,
        accept: "application/json",
      };
      let body: string | undefined;
      if (options.body !== undefined) {
        body = typeof options.body === "string" ? options.body : JSON.stringify(options.body);
        headers["content-type"] = options.contentType ?? "application/json";
        // Node frames no body of a DELETE by itself (no chunked encoding for
        // it): without a length, DeleteOptions would not reach the server.
        headers["content-length"] = String(Buffer.byteLength(body));
      }
      const res = await call(clientAgent, `${server}${path}`, method, headers, body);
      let parsed: unknown = res.text;
      try {
        parsed = JSON.parse(res.text);
      } catch {
        // not JSON (e.g. /readyz): keep the text
      }
      return { status: res.status, body: parsed as T, warnings: res.warnings };
    };

    await waitUntilReady(
      "kube-apiserver",
      apiserver,
      async () => {
        const res = await request("GET", "/readyz");
        return res.status === 200;
      },
      180_000,
    );
    info(`kube-apiserver ${KUBE_VERSION} ready at ${server} in ${seconds(Date.now() - started)}`);

    const kubeconfig = (token: string = adminToken, namespace?: string): string =>
      [
        "apiVersion: v1",
        "kind: Config",
        "clusters:",
        "  - name: test",
        "    cluster:",
        `      server: ${q(server)}`,
        `      certificate-authority-data: ${b64(caData)}`,
        "users:",
        "  - name: user",
        "    user:",
        `      token: ${q(token)}`,
        "contexts:",
        "  - name: test",
        "    context:",
        "      cluster: test",
        "      user: user",
        ...(namespace ? [`      namespace: ${q(namespace)}`] : []),
        "current-context: test",
        "",
      ].join("\n");
    let files = 0;
    const kubeconfigFile = async (token?: string, namespace?: string): Promise<string> => {
      const file = join(runDir, `kubeconfig-${++files}.yaml`);
      await writeFile(file, kubeconfig(token, namespace), { mode: 0o600 });
      return file;
    };

    const expect2xx = (what: string, res: KubeResponse, ...allowed: number[]): void => {
      if ((res.status < 200 || res.status > 299) && !allowed.includes(res.status)) {
        throw new Error(`${what}: HTTP ${res.status} ${JSON.stringify(res.body).slice(0, 500)}`);
      }
    };

    if (opts.controllerManager) {
      const kc = await kubeconfigFile();
      const cm = startProcess({
        command: join(prepared.bin, "kube-controller-manager"),
        args: [
          `--kubeconfig=${kc}`,
          `--authentication-kubeconfig=${kc}`,
          `--authorization-kubeconfig=${kc}`,
          "--bind-address=127.0.0.1",
          `--secure-port=${cmPort}`, // not the fixed 10257: several clusters may run at once
          `--cert-dir=${join(runDir, "cm-certs")}`,
          "--leader-elect=false",
          // Each controller under its own ServiceAccount, as in a real cluster.
          "--use-service-account-credentials",
          `--service-account-private-key-file=${join(runDir, "sa.key")}`,
          `--root-ca-file=${join(runDir, "ca.crt")}`,
          `--service-cluster-ip-range=${SERVICE_CLUSTER_IP_RANGE}`,
          "--profiling=false",
          "--v=1",
        ],
        cwd: runDir,
        logFile: join(runDir, "kube-controller-manager.log"),
      });
      procs.push(cm);
      // The serviceaccount controller creates `default` in every namespace:
      // once it is there, the controllers run.
      await waitUntilReady(
        "kube-controller-manager",
        cm,
        async () => (await request("GET", "/api/v1/namespaces/default/serviceaccounts/default")).status === 200,
        180_000,
      );
      info(`kube-controller-manager running (${seconds(Date.now() - started)} after start)`);
    }

    const createNamespace = async (name: string, labels: Record<string, string> = {}): Promise<void> => {
      const body = { apiVersion: "v1", kind: "Namespace", metadata: { name, labels } };
      const res = await request("POST", "/api/v1/namespaces", { body });
      if (res.status === 409) {
        const patched = await request("PATCH", `/api/v1/namespaces/${name}`, {
          body: { metadata: { labels } },
          contentType: "application/merge-patch+json",
        });
        expect2xx(`label namespace ${name}`, patched);
        return;
      }
      expect2xx(`create namespace ${name}`, res);
    };

    const serviceAccountToken = async (namespace: string, name: string): Promise<string> => {
      const base = `/api/v1/namespaces/${namespace}/serviceaccounts`;
      const created = await request("POST", base, { body: { apiVersion: "v1", kind: "ServiceAccount", metadata: { name } } });
      expect2xx(`create ServiceAccount ${namespace}/${name}`, created, 409);
      const res = await request<{ status: { token: string } }>("POST", `${base}/${name}/token`, {
        body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", spec: { expirationSeconds: 3600 } },
      });
      expect2xx(`TokenRequest for ${namespace}/${name}`, res);
      return res.body.status.token;
    };

    // Path of a kind's collection. Kinds of the CRDs and core/apps/... are
    // mapped by discovery, asked once per group version.
    const discovery = new Map<string, Promise<Map<string, { name: string; namespaced: boolean }>>>();
    const resolvedPath = async (object: KubeObject): Promise<string> => {
      const gv = object.apiVersion;
      if (!discovery.has(gv)) {
        discovery.set(
          gv,
          (async () => {
            const res = await request<{ resources: { name: string; kind: string; namespaced: boolean }[] }>(
              "GET",
              gv.includes("/") ? `/apis/${gv}` : `/api/${gv}`,
            );
            if (res.status !== 200) throw new Error(`discovery of ${gv}: HTTP ${res.status}`);
            return new Map(res.body.resources.filter((r) => !r.name.includes("/")).map((r) => [r.kind, r]));
          })(),
        );
      }
      const kinds = await discovery.get(gv)!;
      const resource = kinds.get(object.kind);
      if (!resource) {
        discovery.delete(gv); // a CRD may have been added since
        throw new Error(`the API server does not serve ${object.kind} in ${gv}`);
      }
      const prefix = gv.includes("/") ? `/apis/${gv}` : `/api/${gv}`;
      if (!resource.namespaced) return `${prefix}/${resource.name}`;
      const ns = object.metadata.namespace;
      if (!ns) throw new Error(`${object.kind}/${object.metadata.name} needs metadata.namespace`);
      return `${prefix}/namespaces/${ns}/${resource.name}`;
    };
    const applyResolved = async <T = any>(
      object: KubeObject,
      options: { token?: string; fieldManager?: string } = {},
    ): Promise<KubeResponse<T>> => {
      const collection = await resolvedPath(object);
      if (!collection.includes("/namespaces/") && object.metadata.namespace !== undefined) {
        // Cluster-scoped (ClusterIssuer, ClusterRole...): a namespace in the body would be refused.
        const { namespace: _ignored, ...metadata } = object.metadata;
        object = { ...object, metadata: metadata as KubeObject["metadata"] };
      }
      const path = `${collection}/${encodeURIComponent(object.metadata.name)}`;
      const query = `?fieldManager=${encodeURIComponent(options.fieldManager ?? FIELD_MANAGER)}&force=true`;
      return request<T>("PATCH", `${path}${query}`, {
        token: options.token ?? adminToken,
        body: object,
        contentType: "application/apply-patch+yaml",
      });
    };
    const applyCrds = async (kind: "cert-manager"): Promise<void> => {
      if (kind !== "cert-manager") throw new Error(`unknown CRD set ${String(kind)}`);
      const crds: KubeObject[] = [];
      for (const file of (await readdir(prepared.crds)).filter((f) => f.endsWith(".yaml")).sort()) {
        for (const doc of parseAllDocuments(await readFile(join(prepared.crds, file), "utf8"))) {
          const object = doc.toJS() as KubeObject | null;
          if (object?.kind === "CustomResourceDefinition") crds.push(object);
        }
      }
      for (const crd of crds) expect2xx(`apply CRD ${crd.metadata.name}`, await applyResolved(crd));
      const deadline = Date.now() + 60_000;
      for (const crd of crds) {
        for (;;) {
          const res = await request<{ status?: { conditions?: { type: string; status: string }[] } }>(
            "GET",
            `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name}`,
          );
          if (res.body.status?.conditions?.some((c) => c.type === "Established" && c.status === "True")) break;
          if (Date.now() > deadline) throw new Error(`CRD ${crd.metadata.name} not Established within 60 s`);
          await sleep(100);
        }
      }
      // Discovery of those groups may have been cached before they existed.
      for (const gv of [...discovery.keys()]) if (gv.includes("cert-manager.io")) discovery.delete(gv);
    };

    let stopped: Promise<void> | undefined;
    const stop = (): Promise<void> => {
      stopped ??= (async () => {
        clientAgent.destroy();
        await stopAll();
      })();
      return stopped;
    };

    return {
      server,
      caData,
      adminToken,
      kubeconfig,
      kubeconfigFile,
      createNamespace,
      serviceAccountToken,
      applyCrds,
      request,
      apply: applyResolved,
      ...(nodeToken ? { nodeToken } : {}),
      controllerManager: Boolean(opts.controllerManager),
      logFiles: procs.map((p) => p.logFile),
      stop,
    };
  } catch (error) {
    agent?.destroy();
    await stopAll();
    throw error;
  }
}
