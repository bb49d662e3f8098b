import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { readdir, readFile, rm, rmdir, writeFile } from "node:fs/promises";
import { join } from "node:path";

/**
 * What the tests' Kubernetes node changes on the host, and how it is undone:
 * by stop(), and by the next start after a run that died (Jest killed, a
 * crash). Before it changes anything, the node writes what it found
 * (HostSnapshot) into its work folder; the cleanup restores that, and removes
 * only what did not exist before.
 */

/**
 * Kernel settings that the node's programs write: the bridge plugin turns on
 * forwarding, kube-proxy route_localnet and the bridge netfilter hooks, the
 * kubelet (without protectKernelDefaults) the panic and overcommit settings
 * and the key quotas.
 */
const SYSCTLS = [
  "net.ipv4.ip_forward",
  "net.ipv6.conf.all.forwarding",
  "net.ipv4.conf.all.route_localnet",
  "net.bridge.bridge-nf-call-iptables",
  "net.bridge.bridge-nf-call-ip6tables",
  "vm.overcommit_memory",
  "vm.panic_on_oom",
  "kernel.panic",
  "kernel.panic_on_oops",
  "kernel.keys.root_maxkeys",
  "kernel.keys.root_maxbytes",
  "net.netfilter.nf_conntrack_max",
] as const;

/** Fixed places that the kubelet, containerd and the CNI plugins use whatever their configured folders. */
const FIXED_PATHS = [
  "/var/lib/kubelet",
  "/var/lib/cni",
  "/var/log/pods",
  "/var/log/containers",
  "/run/containerd",
  "/run/netns",
] as const;

/** Top-level cgroups the kubelet (cgroupfs driver) and containerd create in each hierarchy. */
const CGROUPS = ["kubepods", "k8s.io"] as const;

const CGROUP_ROOT = "/sys/fs/cgroup";
const FIREWALLS = [
  { tool: "iptables", family: "ip" },
  { tool: "ip6tables", family: "ip6" },
] as const;

/**
 * A table of nftables' own (not iptables'), made by startKubeRouter
 * (kube-router.ts): it refuses new connections to a ClusterIP that kube-proxy
 * did not translate (a Service without endpoints) before kube-router's
 * FORWARD chain accepts them.
 */
export const NO_ENDPOINTS_TABLE = "emailsvc-no-endpoints";

export interface HostSnapshot {
  sysctls: Record<string, string>;
  paths: Record<string, boolean>;
  /** Per firewall tool, the tables that existed (iptables-nft creates a table on first use). */
  tables: Record<string, string[]>;
  cgroups: Record<string, string[]>;
}

/** What to remove: the node's own names. */
export interface HostNames {
  workDir: string;
  /** Bridges the node made (the one holding the node address, the CNI bridge). */
  bridges: readonly string[];
  /** The CNI bridge, whose veth ports are the Pods'. */
  cniBridge: string;
  /** containerd's socket: its shims carry it on their command line. */
  containerdSocket: string;
  /** The node's networks (Pods, Services, the node address), whose connection-tracking entries go. */
  networks: readonly string[];
}

const sysctlPath = (name: string): string => join("/proc/sys", ...name.split("."));

/** Runs a command; resolves with stdout, or undefined when it fails or is missing (cleanup goes on). */
export function tryRun(command: string, args: readonly string[]): Promise<string | undefined> {
  return new Promise((resolve) => {
    execFile(command, args, { maxBuffer: 16 * 1024 * 1024, timeout: 60_000 }, (error, stdout) =>
      resolve(error ? undefined : stdout),
    );
  });
}

/** iptables-save's output by table: its rules (`-A ...`) and chains. */
function parseSave(text: string): Map<string, { chains: string[]; rules: string[] }> {
  const tables = new Map<string, { chains: string[]; rules: string[] }>();
  let current: { chains: string[]; rules: string[] } | undefined;
  for (const line of text.split("\n")) {
    if (line.startsWith("*")) {
      current = { chains: [], rules: [] };
      tables.set(line.slice(1).trim(), current);
    } else if (line.startsWith(":") && current) current.chains.push(line.slice(1).split(" ")[0]!);
    else if (line.startsWith("-A ") && current) current.rules.push(line);
  }
  return tables;
}

/** The words of an iptables rule as iptables-save prints it (comments are double-quoted). */
function ruleWords(rule: string): string[] {
  return [...rule.matchAll(/"((?:[^"\\]|\\.)*)"|(\S+)/g)].map((m) => (m[1] !== undefined ? m[1].replace(/\\(.)/g, "$1") : m[2]!));
}

async function dirs(path: string): Promise<string[]> {
  try {
    return (await readdir(path, { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => e.name);
  } catch {
    return [];
  }
}

export async function snapshotHost(): Promise<HostSnapshot> {
  const sysctls: Record<string, string> = {};
  for (const name of SYSCTLS) {
    const value = await readFile(sysctlPath(name), "utf8").catch(() => undefined);
    if (value !== undefined) sysctls[name] = value.trim();
  }
  const paths: Record<string, boolean> = {};
  for (const path of FIXED_PATHS) paths[path] = existsSync(path);
  const tables: Record<string, string[]> = {};
  for (const { tool } of FIREWALLS) {
    const saved = await tryRun(`${tool}-save`, []);
    tables[tool] = saved === undefined ? [] : [...parseSave(saved).keys()];
  }
  const cgroups: Record<string, string[]> = {};
  for (const hierarchy of await dirs(CGROUP_ROOT)) {
    cgroups[hierarchy] = (await dirs(join(CGROUP_ROOT, hierarchy))).filter((d) => (CGROUPS as readonly string[]).includes(d));
  }
  return { sysctls, paths, tables, cgroups };
}

async function cmdline(pid: string): Promise<string> {
  return (await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "")).split("\0").join(" ");
}

function kill(pid: number): void {
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // gone already
  }
}

/** Every process in a cgroup tree (depth first), e.g. a Pod's containers whose shim died. */
async function cgroupProcs(dir: string): Promise<number[]> {
  const pids: number[] = [];
  for (const child of await dirs(dir)) pids.push(...(await cgroupProcs(join(dir, child))));
  const own = await readFile(join(dir, "cgroup.procs"), "utf8").catch(() => "");
  pids.push(...own.split("\n").filter(Boolean).map(Number));
  return pids;
}

async function removeCgroupTree(dir: string): Promise<void> {
  for (const child of await dirs(dir)) await removeCgroupTree(join(dir, child));
  await rmdir(dir).catch(() => undefined);
}

/** Mount points (from /proc/self/mountinfo, octal escapes decoded) that `keep` selects, deepest first. */
async function mountPoints(keep: (path: string) => boolean): Promise<string[]> {
  const info = await readFile("/proc/self/mountinfo", "utf8");
  const points = info
    .split("\n")
    .filter(Boolean)
    .map((line) => line.split(" ")[4]!.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8))))
    .filter(keep);
  return [...new Set(points)].sort((a, b) => b.length - a.length);
}

/**
 * Undoes what the node did to the host. Every step tolerates finding nothing,
 * so it serves both a clean stop (after the processes stopped) and a crash
 * (processes maybe still running: they are killed first). Without a snapshot
 * (the run died before writing one, so before changing anything), kernel
 * settings and fixed paths are left alone.
 */
export async function cleanupHost(names: HostNames, snapshot: HostSnapshot | undefined, pids: readonly number[]): Promise<void> {
  // 1. Processes: the node's own (by pid, if their command line still names the
  // work folder), containerd's shims, and whatever still runs in the Pods' cgroups.
  for (const pid of pids) if ((await cmdline(String(pid))).includes(names.workDir)) kill(pid);
  for (const pid of await readdir("/proc").catch(() => [] as string[])) {
    if (!/^\d+$/.test(pid)) continue;
    const cmd = await cmdline(pid);
    if (cmd.includes("containerd-shim") && cmd.includes(names.containerdSocket)) kill(Number(pid));
  }
  const hierarchies = await dirs(CGROUP_ROOT);
  for (let round = 0; round < 10; round++) {
    let left = 0;
    for (const hierarchy of hierarchies) {
      for (const cgroup of CGROUPS) {
        for (const pid of await cgroupProcs(join(CGROUP_ROOT, hierarchy, cgroup))) {
          left++;
          kill(pid);
        }
      }
    }
    if (left === 0) break;
    await new Promise((r) => setTimeout(r, 200));
  }

  // 2. Mounts: under the work folder (overlay root filesystems, Pod volumes,
  // shm), the Pods' network namespaces, containerd's /run/containerd.
  const netnsDirs = ["/run/netns/", "/var/run/netns/"];
  const points = await mountPoints(
    (p) =>
      p.startsWith(`${names.workDir}/`) ||
      netnsDirs.some((d) => p.startsWith(`${d}cni-`)) ||
      (snapshot?.paths["/run/containerd"] === false && p.startsWith("/run/containerd/")),
  );
  for (const point of points) await tryRun("umount", ["-l", point]);
  for (const dir of netnsDirs) {
    for (const entry of await readdir(dir).catch(() => [] as string[])) {
      if (entry.startsWith("cni-")) await rm(join(dir, entry), { force: true });
    }
  }

  // 3. Links: the Pods' veth ports on the CNI bridge, then the bridges.
  const ports = await tryRun("ip", ["-j", "link", "show", "master", names.cniBridge]);
  for (const port of ports ? (JSON.parse(ports || "[]") as { ifname: string }[]) : []) {
    await tryRun("ip", ["link", "delete", port.ifname]);
  }
  for (const bridge of names.bridges) await tryRun("ip", ["link", "delete", bridge]);

  // 4. Firewall: the KUBE-* and CNI-* chains (kube-proxy, the kubelet, the
  // portmap plugin, kube-router) with the jumps to them, then the tables that did not exist.
  const ours = (chain: string): boolean => /^(KUBE|CNI)-/.test(chain);
  for (const { tool, family } of FIREWALLS) {
    const saved = await tryRun(`${tool}-save`, []);
    if (saved === undefined) continue;
    for (const [table, { chains, rules }] of parseSave(saved)) {
      const mine = chains.filter(ours);
      for (const chain of mine) await tryRun(tool, ["-w", "-t", table, "-F", chain]);
      for (const rule of rules) {
        const words = ruleWords(rule);
        if (ours(words[1]!)) continue; // flushed above
        const jump = words.indexOf("-j");
        if (jump > 0 && ours(words[jump + 1] ?? "")) await tryRun(tool, ["-w", "-t", table, "-D", ...words.slice(1)]);
      }
      for (const chain of mine) await tryRun(tool, ["-w", "-t", table, "-X", chain]);
    }
    if (!snapshot) continue;
    const after = parseSave((await tryRun(`${tool}-save`, [])) ?? "");
    for (const [table, { chains, rules }] of after) {
      const builtIn = chains.every((c) => /^[A-Z]+$/.test(c) && !ours(c));
      if (!snapshot.tables[tool]?.includes(table) && rules.length === 0 && builtIn) {
        await tryRun("nft", ["delete", "table", family, table]);
      }
    }
  }

  await tryRun("nft", ["delete", "table", "ip", NO_ENDPOINTS_TABLE]);
  // kube-router's ipsets (startKubeRouter), now that no rule refers to them.
  const sets = (await tryRun("ipset", ["list", "-n"])) ?? "";
  for (const set of sets.split("\n").filter((name) => /^(inet6:)?KUBE-(SRC|DST)-/.test(name))) await tryRun("ipset", ["destroy", set]);

  // Tracked connections from and to the node's networks (they would expire in minutes).
  for (const network of names.networks) {
    for (const direction of ["-s", "-d"]) await tryRun("conntrack", ["-D", direction, network]);
  }

  // 5. Cgroups the kubelet and containerd made.
  for (const hierarchy of hierarchies) {
    for (const cgroup of CGROUPS) {
      if (snapshot?.cgroups[hierarchy]?.includes(cgroup)) continue;
      await removeCgroupTree(join(CGROUP_ROOT, hierarchy, cgroup));
    }
  }

  // 6. Fixed paths that did not exist, and kernel settings as found.
  if (snapshot) {
    for (const [path, existed] of Object.entries(snapshot.paths)) if (!existed) await rm(path, { recursive: true, force: true });
    for (const [name, value] of Object.entries(snapshot.sysctls)) {
      const now = await readFile(sysctlPath(name), "utf8").catch(() => undefined);
      if (now !== undefined && now.trim() !== value) await writeFile(sysctlPath(name), value).catch(() => undefined);
    }
  }
}
