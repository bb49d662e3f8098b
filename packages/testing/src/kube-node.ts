import { createHash } from "node:crypto";
import { Resolver } from "node:dns/promises";
import { existsSync } from "node:fs";
import { chmod, mkdir, readFile, rm, stat, symlink, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { stringify } from "yaml";
import { alive, ensureCachedDir, machineLock } from "./cache.js";
import { cleanupHost, type HostNames, type HostSnapshot, snapshotHost, tryRun } from "./kube-node-host.js";
import { type KubeCluster, type KubePrepared, prepareKube, startKubeCluster } from "./kube.js";
import { info, seconds } from "./log.js";
import { freePort } from "./ports.js";
import { type ManagedProcess, runCapture, runLogged, startProcess, waitUntilReady } from "./proc.js";

/**
 * A real single-node Kubernetes for tests, without Docker: Debian's containerd
 * (started here with its own root, state and socket) and runc, the bridge CNI
 * plugin, the control plane of kube.ts, and kubelet, kube-scheduler and
 * kube-proxy (iptables) from the same cached build; CoreDNS built from its Go
 * module runs on the host at the node address. Images are imported from
 * docker-archive tars (no registry is reachable).
 *
 * One per machine (fixed addresses, host firewall chains, cgroups): a lock
 * makes a second start wait. Everything it changes on the host is undone by
 * stop(), and by the next start after a run that died (kube-node-host.ts).
 */
export const COREDNS_VERSION = "v1.11.3";
const COREDNS_MODULE = "github.com/coredns/coredns";

/** The images every node has, built by the kit (no registry is reachable). */
export const KUBE_NODE_IMAGES = {
  /** The sandbox ("pause") image: a static C program that waits and reaps. */
  pause: "docker.io/emailsvc-test/pause:1",
  /**
   * Debian's static busybox with its applets, /www/index.html ("hello from a
   * Pod") for `httpd -f -p 8080 -h /www`, and a passwd naming uid 65534.
   * Debian's busybox `wget` crashes: use `nc` in Pods.
   */
  busybox: "docker.io/emailsvc-test/busybox:1",
} as const;

const NODE_NAME = "emailsvc-node";
/**
 * The node's address, on a bridge of its own with no ports: the kubelet
 * refuses a loopback node IP, and this kernel has no dummy links. Host servers
 * that Pods must reach listen here (not on 127.0.0.1).
 */
const NODE_ADDRESS = "10.243.0.1";
const NODE_BRIDGE = "esvc-node0";
const CNI_BRIDGE = "esvc-cni0";
const POD_SUBNET = "10.244.0.0/24";
const POD_GATEWAY = "10.244.0.1";
/** The API server's --service-cluster-ip-range (kube.ts). */
const SERVICE_SUBNET = "10.96.0.0/16";
const CLUSTER_DOMAIN = "cluster.local";
/** A fixed folder, so that the next start finds what a run that died left behind. */
const WORK_DIR = "/var/tmp/emailsvc-kube-node";
const LOCK_DIR = `${WORK_DIR}.lock`;

const REPO_ROOT = resolve(__dirname, "..", "..", "..");
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export interface KubeNodeOptions {
  /** docker-archive tars to import into containerd's k8s.io namespace (e.g. the project's image). */
  images?: readonly string[];
  /**
   * Called once the machine is this node's (the lock taken, what a dead run
   * left removed) and before anything changes: e.g. to record the host's
   * state, as a test of stop() does.
   */
  beforeStart?: () => Promise<void>;
}

export interface KubeNode extends KubeCluster {
  readonly nodeName: string;
  /** Where Pods reach the host: servers for Pods listen on this address. */
  readonly nodeAddress: string;
  /** The Services' ClusterIP range (the API server's --service-cluster-ip-range). */
  readonly serviceSubnet: string;
  /** The admin's kubeconfig (mode 0600), valid until stop(). */
  readonly kubeconfigPath: string;
  /** Names of the images imported (the kit's and the given tars'). */
  readonly images: readonly string[];
  /** Waits until at least one Pod matches the label selector and all that match are Ready; returns their names. */
  waitForPodsReady(namespace: string, labelSelector: string, timeoutMs?: number): Promise<string[]>;
  /** Waits until the Pod has ended (Succeeded or Failed); returns the phase. */
  waitForPodEnd(namespace: string, name: string, timeoutMs?: number): Promise<"Succeeded" | "Failed">;
  /** The Pod's log (its one container, or `container`), through the API server and the kubelet. */
  podLogs(namespace: string, name: string, container?: string): Promise<string>;
  /** Why a Pod is where it is: phase, conditions, container states and the namespace's events, for failing tests. */
  describePods(namespace: string): Promise<string>;
  /** Deletes every Pod, stops every process and leaves the host as it was found. */
  stop(): Promise<void>;
}

export interface KubeNodePrepared {
  kube: KubePrepared;
  coredns: string;
  /** docker-archive tars of KUBE_NODE_IMAGES. */
  imageTars: { pause: string; busybox: string };
  built: boolean;
  ms: number;
}

/** The Debian packages (containerd, runc, CNI plugins, iptables, nftables, busybox-static): scripts/kube-node/install.sh. */
async function installPackages(): Promise<void> {
  const script = join(REPO_ROOT, "scripts", "kube-node", "install.sh");
  await runCapture("bash", [script], { timeoutMs: 10 * 60_000 });
}

/** CoreDNS from its Go module, into `<cache>/coredns-<version>/bin/coredns` (about 90 s once). */
async function prepareCoreDns(): Promise<{ binary: string; built: boolean }> {
  const started = Date.now();
  const { dir, built } = await ensureCachedDir(`coredns-${COREDNS_VERSION}`, async (tmp) => {
    info(`building CoreDNS ${COREDNS_VERSION} into the cache (first run only; about 1.5 min)`);
    const env = {
      ...process.env,
      GOTOOLCHAIN: "local",
      GOFLAGS: `${process.env.GOFLAGS ?? ""} -buildvcs=false`.trim(),
      GOBIN: join(tmp, "bin"),
    };
    await runLogged("go", ["install", "-trimpath", `${COREDNS_MODULE}@${COREDNS_VERSION}`], {
      cwd: tmp,
      logFile: join(tmp, "build.log"),
      env,
      timeoutMs: 20 * 60_000,
    });
    await writeFile(join(tmp, "build.json"), JSON.stringify({ version: COREDNS_VERSION, totalMs: Date.now() - started, builtAt: new Date() }, null, 2));
  });
  return { binary: join(dir, "bin", "coredns"), built };
}

/**
 * A docker-archive tar (what `docker save` writes and `ctr images import`
 * reads) of one layer: the folder `rootfs`, owned by root, with fixed times so
 * that the same content gives the same image id.
 */
async function writeDockerArchive(work: string, rootfs: string, ref: string, config: Record<string, unknown>, out: string): Promise<void> {
  const logFile = join(work, "build.log");
  const layer = join(work, "layer.tar");
  await runLogged(
    "tar",
    ["--create", "--file", layer, "--sort=name", "--owner=0", "--group=0", "--numeric-owner", "--mtime=@0", "-C", rootfs, "."],
    { cwd: work, logFile },
  );
  const diffId = createHash("sha256").update(await readFile(layer)).digest("hex");
  const imageConfig = JSON.stringify({
    architecture: "amd64",
    os: "linux",
    created: "1970-01-01T00:00:00Z",
    config,
    rootfs: { type: "layers", diff_ids: [`sha256:${diffId}`] },
  });
  const configId = createHash("sha256").update(imageConfig).digest("hex");
  const archive = join(work, "archive");
  await mkdir(join(archive, diffId), { recursive: true });
  await runLogged("mv", [layer, join(archive, diffId, "layer.tar")], { cwd: work, logFile });
  await writeFile(join(archive, `${configId}.json`), imageConfig);
  await writeFile(
    join(archive, "manifest.json"),
    JSON.stringify([{ Config: `${configId}.json`, RepoTags: [ref.replace(/^docker\.io\//, "")], Layers: [`${diffId}/layer.tar`] }]),
  );
  await runLogged("tar", ["--create", "--file", out, "--owner=0", "--group=0", "--numeric-owner", "--mtime=@0", "-C", archive, "."], {
    cwd: work,
    logFile,
  });
  await rm(archive, { recursive: true, force: true });
}

/** The sandbox program of the pause image: waits for a signal, reaps orphans. Written here, built with gcc -static. */
const PAUSE_C = `#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_stop(int sig) { (void)sig; _exit(0); }
static void on_child(int sig) { (void)sig; while (waitpid(-1, 0, WNOHANG) > 0) {} }

int main(void) {
  struct sigaction stop = {0}, child = {0};
  stop.sa_handler = on_stop;
  sigaction(SIGINT, &stop, 0);
  sigaction(SIGTERM, &stop, 0);
  child.sa_handler = on_child;
  child.sa_flags = SA_NOCLDSTOP;
  sigaction(SIGCHLD, &child, 0);
  for (;;) pause();
}
`;

/** The busybox image's version: bump with any change to how the images are built. */
const IMAGES_REVISION = 1;

/** The kit's images as docker-archive tars in the cache (seconds, once). */
async function prepareNodeImages(): Promise<{ dir: string; built: boolean }> {
  const key = createHash("sha256").update(`${IMAGES_REVISION}\n${PAUSE_C}`).digest("hex").slice(0, 8);
  return ensureCachedDir(`kube-node-images-${key}`, async (tmp) => {
    const logFile = join(tmp, "build.log");
    // pause
    const pauseRoot = join(tmp, "pause-root");
    await mkdir(pauseRoot);
    await writeFile(join(tmp, "pause.c"), PAUSE_C);
    await runLogged("gcc", ["-Os", "-static", "-o", join(pauseRoot, "pause"), join(tmp, "pause.c")], { cwd: tmp, logFile });
    await writeDockerArchive(tmp, pauseRoot, KUBE_NODE_IMAGES.pause, { Entrypoint: ["/pause"] }, join(tmp, "pause.tar"));
    // busybox
    const bb = join(tmp, "busybox-root");
    for (const d of ["bin", "etc", "tmp", "www"]) await mkdir(join(bb, d), { recursive: true });
    await chmod(join(bb, "tmp"), 0o1777);
    await runLogged("cp", ["/bin/busybox", join(bb, "bin", "busybox")], { cwd: tmp, logFile });
    const applets = (await runCapture("/bin/busybox", ["--list"])).split("\n").filter((a) => a && a !== "busybox");
    for (const applet of applets) await symlink("busybox", join(bb, "bin", applet));
    await writeFile(join(bb, "etc", "passwd"), "root:x:0:0:root:/:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n");
    await writeFile(join(bb, "etc", "group"), "root:x:0:\nnogroup:x:65534:\n");
    await writeFile(join(bb, "www", "index.html"), "hello from a Pod\n");
    await writeDockerArchive(tmp, bb, KUBE_NODE_IMAGES.busybox, { Cmd: ["/bin/sh"], Env: ["PATH=/bin"] }, join(tmp, "busybox.tar"));
    await rm(pauseRoot, { recursive: true });
    await rm(bb, { recursive: true });
  });
}

let preparing: Promise<KubeNodePrepared> | undefined;

/** Installs, builds or finds everything startKubeNode needs, without starting anything. */
export function prepareKubeNode(): Promise<KubeNodePrepared> {
  preparing ??= (async () => {
    const started = Date.now();
    await installPackages();
    // The Go builds one after the other: on two cores, at once is no faster.
    const kube = await prepareKube();
    const coredns = await prepareCoreDns();
    const images = await prepareNodeImages();
    return {
      kube,
      coredns: coredns.binary,
      imageTars: { pause: join(images.dir, "pause.tar"), busybox: join(images.dir, "busybox.tar") },
      built: kube.built || coredns.built || images.built,
      ms: Date.now() - started,
    };
  })();
  preparing.catch(() => (preparing = undefined));
  return preparing;
}

const HOST_NAMES: HostNames = {
  workDir: WORK_DIR,
  bridges: [CNI_BRIDGE, NODE_BRIDGE],
  cniBridge: CNI_BRIDGE,
  containerdSocket: join(WORK_DIR, "containerd", "containerd.sock"),
  networks: [POD_SUBNET, SERVICE_SUBNET, NODE_ADDRESS],
};

async function readJson<T>(file: string): Promise<T | undefined> {
  try {
    return JSON.parse(await readFile(file, "utf8")) as T;
  } catch {
    return undefined;
  }
}

/** Undoes what a previous node left (a run that died), from the snapshot it wrote. */
async function cleanupLeftovers(): Promise<boolean> {
  if (!existsSync(WORK_DIR)) return false;
  info(`a previous Kubernetes node did not stop: cleaning up after it (${WORK_DIR})`);
  const snapshot = await readJson<HostSnapshot>(join(WORK_DIR, "host.json"));
  const pids = (await readJson<number[]>(join(WORK_DIR, "pids.json"))) ?? [];
  await cleanupHost(HOST_NAMES, snapshot, pids);
  await rm(WORK_DIR, { recursive: true, force: true });
  return true;
}

/**
 * Removes what a node that died left on the host (its processes, Pods,
 * mounts, links, firewall chains; kernel settings restored), under the lock,
 * so never a node that runs. For `npm run kube:down` after a crash; a start
 * does the same by itself.
 */
export async function cleanupKubeNodeLeftovers(): Promise<boolean> {
  const release = await machineLock(LOCK_DIR, "which runs the tests' Kubernetes node");
  try {
    return await cleanupLeftovers();
  } finally {
    await release();
  }
}

/** The pid of the process that runs the node on this machine, if one does. */
export async function kubeNodeOwner(): Promise<number | undefined> {
  const pid = Number(await readFile(join(LOCK_DIR, "pid"), "utf8").catch(() => ""));
  return pid > 0 && alive(pid) ? pid : undefined;
}

/**
 * Starts the node: containerd, the control plane (with the controller
 * manager), kube-scheduler, the kubelet, kube-proxy and CoreDNS; imports the
 * images; waits until the node is Ready and CoreDNS answers. Builds what the
 * cache lacks first (see prepareKubeNode).
 */
export async function startKubeNode(opts: KubeNodeOptions = {}): Promise<KubeNode> {
  const prepared = await prepareKubeNode();
  const release = await machineLock(LOCK_DIR, "which runs the tests' Kubernetes node");
  const started = Date.now();
  const procs: ManagedProcess[] = [];
  let cluster: KubeCluster | undefined;
  let snapshot: HostSnapshot | undefined;
  const pidsFile = join(WORK_DIR, "pids.json");
  const track = async (p: ManagedProcess): Promise<ManagedProcess> => {
    procs.push(p);
    await writeFile(pidsFile, JSON.stringify(procs.map((q) => q.pid)));
    return p;
  };
  const teardown = async (): Promise<void> => {
    // The node's programs, the control plane, and containerd last (procs[0]).
    for (const p of procs.slice(1).reverse()) await p.stop(10_000);
    await cluster?.stop();
    await procs[0]?.stop(10_000);
    await cleanupHost(HOST_NAMES, snapshot, procs.map((p) => p.pid));
    await rm(WORK_DIR, { recursive: true, force: true });
  };
  try {
    await cleanupLeftovers();
    await opts.beforeStart?.();
    await mkdir(WORK_DIR, { recursive: true, mode: 0o700 });
    snapshot = await snapshotHost();
    await writeFile(join(WORK_DIR, "host.json"), JSON.stringify(snapshot, null, 2));

    // The node address, on a bridge of its own.
    await runCapture("ip", ["link", "add", NODE_BRIDGE, "type", "bridge"]);
    await runCapture("ip", ["addr", "add", `${NODE_ADDRESS}/32`, "dev", NODE_BRIDGE]);
    await runCapture("ip", ["link", "set", NODE_BRIDGE, "up"]);

    const containerd = await startContainerd(prepared, opts.images ?? [], track);
    // The control plane starts while the images are imported; both settle
    // before either failure is thrown, so that teardown stops a started cluster.
    const [imported, clusterStarted] = await Promise.allSettled([
      containerd.imported,
      startKubeCluster({ controllerManager: true, node: { name: NODE_NAME, address: NODE_ADDRESS } }),
    ]);
    if (clusterStarted.status === "fulfilled") cluster = clusterStarted.value;
    if (imported.status === "rejected") throw imported.reason;
    if (clusterStarted.status === "rejected") throw clusterStarted.reason;
    const images = imported.value;
    const c = clusterStarted.value;

    const kubeconfigPath = join(WORK_DIR, "admin.kubeconfig");
    await writeFile(kubeconfigPath, c.kubeconfig(), { mode: 0o600 });
    const kubeletKubeconfig = join(WORK_DIR, "kubelet.kubeconfig");
    await writeFile(kubeletKubeconfig, c.kubeconfig(c.nodeToken), { mode: 0o600 });

    const [schedulerPort, healthzPort, proxyMetricsPort, proxyHealthzPort, dnsHealthPort] = await Promise.all([
      freePort(),
      freePort(),
      freePort(),
      freePort(),
      freePort(),
    ]);
    const bin = prepared.kube.bin;
    const logFile = (name: string): string => join(WORK_DIR, `${name}.log`);

    await track(
      startProcess({
        command: join(bin, "kube-scheduler"),
        args: [
          `--kubeconfig=${kubeconfigPath}`,
          `--authentication-kubeconfig=${kubeconfigPath}`,
          `--authorization-kubeconfig=${kubeconfigPath}`,
          "--bind-address=127.0.0.1",
          `--secure-port=${schedulerPort}`,
          "--leader-elect=false",
          "--v=1",
        ],
        cwd: WORK_DIR,
        logFile: logFile("kube-scheduler"),
      }),
    );

    const kubeletConfig = join(WORK_DIR, "kubelet-config.yaml");
    await writeFile(
      kubeletConfig,
      stringify({
        apiVersion: "kubelet.config.k8s.io/v1beta1",
        kind: "KubeletConfiguration",
        address: NODE_ADDRESS,
        readOnlyPort: 0,
        healthzBindAddress: "127.0.0.1",
        healthzPort,
        cgroupDriver: "cgroupfs",
        failSwapOn: false,
        containerRuntimeEndpoint: `unix://${containerd.socket}`,
        // The API server reaches the kubelet (logs, exec) without a client
        // certificate; the kubelet listens on the node address only.
        authentication: { anonymous: { enabled: true }, webhook: { enabled: false } },
        authorization: { mode: "AlwaysAllow" },
        resolvConf: "/etc/resolv.conf",
        clusterDomain: CLUSTER_DOMAIN,
        clusterDNS: [NODE_ADDRESS],
        podLogsDir: join(WORK_DIR, "pod-logs"),
        volumePluginDir: join(WORK_DIR, "volume-plugins"),
        serializeImagePulls: false,
        // A test machine's disk is often fuller than the defaults allow.
        evictionHard: { "memory.available": "100Mi", "nodefs.available": "2%", "imagefs.available": "2%" },
        imageGCHighThresholdPercent: 99,
        imageGCLowThresholdPercent: 98,
        maxPods: 60,
        // Status every 2 s (default 10 s) so that Ready shows soon.
        nodeStatusUpdateFrequency: "2s",
      }),
    );
    await mkdir(join(WORK_DIR, "pod-logs"));
    const kubelet = await track(
      startProcess({
        command: join(bin, "kubelet"),
        args: [
          `--config=${kubeletConfig}`,
          `--kubeconfig=${kubeletKubeconfig}`,
          `--root-dir=${join(WORK_DIR, "kubelet")}`,
          `--cert-dir=${join(WORK_DIR, "kubelet-pki")}`,
          `--hostname-override=${NODE_NAME}`,
          `--node-ip=${NODE_ADDRESS}`,
          "--v=1",
        ],
        cwd: WORK_DIR,
        logFile: logFile("kubelet"),
      }),
    );

    const proxyConfig = join(WORK_DIR, "kube-proxy.yaml");
    await writeFile(
      proxyConfig,
      stringify({
        apiVersion: "kubeproxy.config.k8s.io/v1alpha1",
        kind: "KubeProxyConfiguration",
        clientConnection: { kubeconfig: kubeconfigPath },
        mode: "iptables",
        clusterCIDR: POD_SUBNET,
        hostnameOverride: NODE_NAME,
        metricsBindAddress: `127.0.0.1:${proxyMetricsPort}`,
        healthzBindAddress: `127.0.0.1:${proxyHealthzPort}`,
        nodePortAddresses: [`${NODE_ADDRESS}/32`],
        // Leave the host's conntrack settings alone.
        conntrack: { maxPerCore: 0, tcpEstablishedTimeout: "0s", tcpCloseWaitTimeout: "0s" },
      }),
    );
    await track(
      startProcess({
        command: join(bin, "kube-proxy"),
        args: [`--config=${proxyConfig}`, "--v=1"],
        cwd: WORK_DIR,
        logFile: logFile("kube-proxy"),
      }),
    );

    // CoreDNS on the host at the node address: cluster names only, nothing
    // forwarded (Pods have no business resolving names outside the cluster here).
    const corefile = join(WORK_DIR, "Corefile");
    await writeFile(
      corefile,
      [
        ".:53 {",
        `  bind ${NODE_ADDRESS}`,
        "  errors",
        `  health 127.0.0.1:${dnsHealthPort}`,
        `  kubernetes ${CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {`,
        `    kubeconfig ${kubeconfigPath} test`,
        "    pods insecure",
        "  }",
        "  cache 5",
        "}",
        "",
      ].join("\n"),
    );
    const coredns = await track(
      startProcess({ command: prepared.coredns, args: ["-conf", corefile], cwd: WORK_DIR, logFile: logFile("coredns") }),
    );

    await waitUntilReady(
      "kubelet (node Ready)",
      kubelet,
      async () => {
        const res = await c.request<{ status?: { conditions?: { type: string; status: string }[] } }>("GET", `/api/v1/nodes/${NODE_NAME}`);
        return res.status === 200 && Boolean(res.body.status?.conditions?.some((x) => x.type === "Ready" && x.status === "True"));
      },
      180_000,
    );
    const resolver = new Resolver({ timeout: 1000, tries: 1 });
    resolver.setServers([NODE_ADDRESS]);
    await waitUntilReady(
      "CoreDNS",
      coredns,
      async () => (await resolver.resolve4(`kubernetes.default.svc.${CLUSTER_DOMAIN}`)).length > 0,
      60_000,
    );
    info(`Kubernetes node ${NODE_NAME} Ready at ${NODE_ADDRESS} in ${seconds(Date.now() - started)} (kubeconfig ${kubeconfigPath})`);

    const node = nodeCalls(c);
    let stopping: Promise<void> | undefined;
    const stop = (): Promise<void> => {
      stopping ??= (async () => {
        const t = Date.now();
        try {
          if (kubelet.running()) await deleteWorkloads(c, containerd.socket);
        } finally {
          try {
            await teardown();
          } finally {
            await release();
          }
        }
        info(`Kubernetes node stopped and cleaned up in ${seconds(Date.now() - t)}`);
      })();
      return stopping;
    };
    return {
      ...c,
      ...node,
      nodeName: NODE_NAME,
      nodeAddress: NODE_ADDRESS,
      serviceSubnet: SERVICE_SUBNET,
      kubeconfigPath,
      images,
      logFiles: [...c.logFiles, ...procs.map((p) => p.logFile)],
      stop,
    };
  } catch (error) {
    try {
      await teardown();
    } finally {
      await release();
    }
    throw error;
  }
}

/** containerd with its own root, state, socket and config; then the images imported. */
async function startContainerd(
  prepared: KubeNodePrepared,
  tars: readonly string[],
  track: (p: ManagedProcess) => Promise<ManagedProcess>,
): Promise<{ socket: string; imported: Promise<string[]> }> {
  const dir = join(WORK_DIR, "containerd");
  const cniConf = join(WORK_DIR, "cni", "net.d");
  await mkdir(cniConf, { recursive: true });
  await mkdir(dir, { recursive: true });
  const socket = join(dir, "containerd.sock");
  await writeFile(
    join(cniConf, "10-bridge.conflist"),
    JSON.stringify({
      cniVersion: "0.4.0",
      name: "emailsvc-test",
      plugins: [
        {
          type: "bridge",
          bridge: CNI_BRIDGE,
          isGateway: true,
          // Pods reach only the host and each other: no masquerading to the outside.
          ipMasq: false,
          hairpinMode: true,
          ipam: {
            type: "host-local",
            dataDir: join(WORK_DIR, "cni", "ipam"),
            ranges: [[{ subnet: POD_SUBNET, gateway: POD_GATEWAY }]],
            routes: [{ dst: "0.0.0.0/0" }],
          },
        },
        { type: "portmap", capabilities: { portMappings: true } },
      ],
    }),
  );
  const config = join(dir, "config.toml");
  await writeFile(
    config,
    `version = 2
root = "${dir}/root"
state = "${dir}/state"
[grpc]
  address = "${socket}"
[ttrpc]
  address = "${socket}.ttrpc"
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "${dir}/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "${KUBE_NODE_IMAGES.pause}"
  enable_cdi = false
  # The one wall: root here lacks CAP_SYS_RESOURCE, so runc cannot set the
  # kubelet's oom_score_adj of -998 ("can't get final child's PID from pipe").
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "${cniConf}"
    max_conf_num = 1
`,
  );
  const proc = await track(
    startProcess({ command: "containerd", args: ["--config", config], cwd: dir, logFile: join(dir, "containerd.log") }),
  );
  const ctr = (...args: string[]): Promise<string> => runCapture("ctr", ["--address", socket, "--namespace", "k8s.io", ...args], { timeoutMs: 120_000 });
  await waitUntilReady("containerd", proc, async () => existsSync(socket) && (await ctr("version")).includes("Server"), 30_000);
  const imported = (async () => {
    const names: string[] = [];
    for (const tar of [prepared.imageTars.pause, prepared.imageTars.busybox, ...tars]) {
      if (!(await stat(tar).catch(() => undefined))) throw new Error(`no image archive at ${tar}`);
      const out = await ctr("images", "import", tar);
      names.push(...[...out.matchAll(/unpacking (\S+)/g)].map((m) => m[1]!));
    }
    return names;
  })();
  imported.catch(() => undefined);
  return { socket, imported };
}

/**
 * Deletes every workload before the processes stop, so that the kubelet stops
 * the containers and the CNI plugin releases their network: controllers first
 * (orphaning their Pods, which would otherwise be recreated), then the Pods
 * with a 1 s grace period.
 */
async function deleteWorkloads(c: KubeCluster, socket: string): Promise<void> {
  const orphan = "?propagationPolicy=Orphan";
  for (const [group, resource] of [
    ["apis/apps/v1", "deployments"],
    ["apis/apps/v1", "replicasets"],
    ["apis/apps/v1", "statefulsets"],
    ["apis/apps/v1", "daemonsets"],
    ["apis/batch/v1", "cronjobs"],
    ["apis/batch/v1", "jobs"],
  ] as const) {
    const list = await c.request<{ items: { metadata: { name: string; namespace: string } }[] }>("GET", `/${group}/${resource}`);
    for (const item of list.body.items ?? []) {
      await c.request("DELETE", `/${group}/namespaces/${item.metadata.namespace}/${resource}/${item.metadata.name}${orphan}`);
    }
  }
  const pods = await c.request<{ items: { metadata: { name: string; namespace: string } }[] }>("GET", "/api/v1/pods");
  for (const pod of pods.body.items ?? []) {
    await c.request("DELETE", `/api/v1/namespaces/${pod.metadata.namespace}/pods/${pod.metadata.name}?gracePeriodSeconds=1`);
  }
  const deadline = Date.now() + 60_000;
  for (;;) {
    const left = await c.request<{ items: unknown[] }>("GET", "/api/v1/pods");
    const sandboxes = (await tryRun("ctr", ["--address", socket, "--namespace", "k8s.io", "tasks", "ls", "-q"])) ?? "";
    if ((left.body.items ?? []).length === 0 && sandboxes.trim() === "") return;
    if (Date.now() > deadline) {
      info(`Pods still there after 60 s (${(left.body.items ?? []).length}); stopping anyway`);
      return;
    }
    await sleep(250);
  }
}

interface PodStatus {
  metadata: { name: string };
  status?: {
    phase?: string;
    reason?: string;
    message?: string;
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
    containerStatuses?: { name: string; ready: boolean; restartCount: number; state?: Record<string, unknown> }[];
  };
}

function nodeCalls(c: KubeCluster): Pick<KubeNode, "waitForPodsReady" | "waitForPodEnd" | "podLogs" | "describePods"> {
  const describePods = async (namespace: string): Promise<string> => {
    const pods = await c.request<{ items: PodStatus[] }>("GET", `/api/v1/namespaces/${namespace}/pods`);
    const events = await c.request<{ items: { involvedObject: { name: string }; reason: string; message: string }[] }>(
      "GET",
      `/api/v1/namespaces/${namespace}/events`,
    );
    return [
      ...(pods.body.items ?? []).map((p) => `pod ${p.metadata.name}: ${JSON.stringify(p.status)}`),
      ...(events.body.items ?? []).slice(-30).map((e) => `event ${e.involvedObject.name}: ${e.reason} ${e.message}`),
    ].join("\n");
  };
  const waitForPodsReady = async (namespace: string, labelSelector: string, timeoutMs = 120_000): Promise<string[]> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const pods = await c.request<{ items: PodStatus[] }>(
        "GET",
        `/api/v1/namespaces/${namespace}/pods?labelSelector=${encodeURIComponent(labelSelector)}`,
      );
      const items = pods.body.items ?? [];
      const ready = (p: PodStatus): boolean => Boolean(p.status?.conditions?.some((x) => x.type === "Ready" && x.status === "True"));
      if (items.length > 0 && items.every(ready)) return items.map((p) => p.metadata.name);
      if (Date.now() > deadline) {
        throw new Error(`Pods ${labelSelector} in ${namespace} not Ready within ${timeoutMs / 1000} s:\n${await describePods(namespace)}`);
      }
      await sleep(250);
    }
  };
  const waitForPodEnd = async (namespace: string, name: string, timeoutMs = 120_000): Promise<"Succeeded" | "Failed"> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const pod = await c.request<PodStatus>("GET", `/api/v1/namespaces/${namespace}/pods/${name}`);
      const phase = pod.body.status?.phase;
      if (phase === "Succeeded" || phase === "Failed") return phase;
      if (Date.now() > deadline) throw new Error(`Pod ${namespace}/${name} did not end within ${timeoutMs / 1000} s:\n${await describePods(namespace)}`);
      await sleep(250);
    }
  };
  const podLogs = async (namespace: string, name: string, container?: string): Promise<string> => {
    const query = container ? `?container=${encodeURIComponent(container)}` : "";
    const res = await c.request<string>("GET", `/api/v1/namespaces/${namespace}/pods/${name}/log${query}`);
    if (res.status !== 200) throw new Error(`logs of ${namespace}/${name}: HTTP ${res.status} ${JSON.stringify(res.body)}`);
    return typeof res.body === "string" ? res.body : JSON.stringify(res.body);
  };
  return { waitForPodsReady, waitForPodEnd, podLogs, describePods };
}
