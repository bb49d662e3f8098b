import { readdirSync, readFileSync, readlinkSync } from "node:fs";

/** Peak resident memory of a running process so far (Linux VmHWM), in MB. */
export function peakRssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return Math.round(kb / 1024);
}

/** CPU time a running process has used so far (user + system, every thread), in seconds. */
export function cpuSeconds(pid: number): number {
  return cpuSecondsOf(`/proc/${pid}`);
}

/**
 * CPU time (user + system) of a process or a thread so far, in seconds, by
 * its /proc directory: `/proc/<pid>`, `/proc/thread-self`,
 * `/proc/self/task/<tid>`.
 */
export function cpuSecondsOf(dir: string): number {
  const fields = statFields(dir);
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

/** Seconds a process or thread (its /proc directory) was ready to run and waited for a core: schedstat's second field, in ns. */
export function waitSecondsOf(dir: string): number {
  return Number(readFileSync(`${dir}/schedstat`, "utf8").split(" ")[1]) / 1e9;
}

/**
 * The fields of `<dir>/stat` after the command name in parentheses (which may
 * itself hold spaces): utime and stime, in clock ticks, are the 12th and 13th.
 */
function statFields(dir: string): string[] {
  const stat = readFileSync(`${dir}/stat`, "utf8");
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
}

/** Linux's USER_HZ, 100 on every architecture Node runs on (`getconf CLK_TCK`). */
const CLOCK_TICKS = 100;

/**
 * CPU seconds of a process and its children so far: its own, its reaped
 * children's (cutime, cstime) and those of its children still running. For a
 * server that forks a process per connection (PostgreSQL's postmaster and
 * its backends), where the work is done in the children.
 */
export function treeCpuSeconds(pid: number): number {
  let total = cpuTicks(pid, true);
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === pid) continue;
    try {
      if (Number(statFields(`/proc/${entry}`)[1]) === pid) total += cpuTicks(Number(entry), true);
    } catch {
      // gone meanwhile
    }
  }
  return total / CLOCK_TICKS;
}

function cpuTicks(pid: number, withChildren: boolean): number {
  const fields = statFields(`/proc/${pid}`);
  // utime, stime, then cutime, cstime (children waited for).
  return Number(fields[11]) + Number(fields[12]) + (withChildren ? Number(fields[13]) + Number(fields[14]) : 0);
}

/**
 * The process listening on TCP `port` of this machine (by the socket's inode
 * in /proc/net/tcp{,6} and the process holding it among /proc/<pid>/fd), or
 * undefined: how a benchmark finds a server it did not start (the test
 * servers' Kafka broker, FerretDB) to read its CPU time.
 */
export function pidListeningOn(port: number): number | undefined {
  const hexPort = port.toString(16).toUpperCase().padStart(4, "0");
  const inodes = new Set<string>();
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text = "";
    try {
      text = readFileSync(table, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const fields = line.trim().split(/\s+/);
      // local_address is `ADDR:PORT` in hex; state 0A is LISTEN; the inode is field 10.
      if (fields.length > 9 && fields[1]!.endsWith(`:${hexPort}`) && fields[3] === "0A") inodes.add(`socket:[${fields[9]}]`);
    }
  }
  if (inodes.size === 0) return undefined;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${entry}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        if (inodes.has(readlinkSync(`/proc/${entry}/fd/${fd}`))) return Number(entry);
      } catch {
        // closed meanwhile
      }
    }
  }
  return undefined;
}

/**
 * The PostgreSQL postmaster behind a FerretDB process: its
 * `--postgresql-url` names the socket directory (`host=/dir`) and port, and
 * the socket's lock file there starts with the postmaster's pid.
 */
export function postgresPidOfFerretDB(ferretPid: number): number | undefined {
  try {
    const args = readFileSync(`/proc/${ferretPid}/cmdline`, "utf8").split("\0");
    const url = args.find((a) => a.startsWith("--postgresql-url="))?.slice("--postgresql-url=".length);
    if (!url) return undefined;
    // `postgres://user@/db?host=%2Fdir&port=5432` (a socket) or `postgres://user@host:port/db`.
    const query = new URLSearchParams(url.includes("?") ? url.slice(url.indexOf("?") + 1) : "");
    const host = query.get("host") ?? "";
    const port = query.get("port") ?? (/@[^/:]*:(\d+)/.exec(url)?.[1] ?? "5432");
    if (host.startsWith("/")) return Number(readFileSync(`${host}/.s.PGSQL.${port}.lock`, "utf8").split("\n")[0]) || undefined;
    return pidListeningOn(Number(port));
  } catch {
    return undefined;
  }
}

/**
 * CPU-seconds samplers of the servers a run uses, found by the ports they
 * listen on (so also the shared test servers of KAFKA_BROKERS and MONGO_URL):
 * `kafka` (the broker's JVM), `ferretdb` and `postgresql` (the postmaster and
 * its backends). A server not on this machine has none.
 */
export function serverCpu(kafkaBrokers: string, mongoUrl?: string): Record<string, () => number> {
  const samplers: Record<string, () => number> = {};
  const portOf = (address: string) => Number(/:(\d+)/.exec(address)?.[1] ?? 0);
  const broker = pidListeningOn(portOf(kafkaBrokers.split(",")[0]!));
  if (broker) samplers.kafka = () => cpuSeconds(broker);
  if (mongoUrl) {
    const mongo = pidListeningOn(portOf(mongoUrl.replace(/^mongodb:\/\//, "")));
    if (mongo) {
      samplers.ferretdb = () => cpuSeconds(mongo);
      const postgres = postgresPidOfFerretDB(mongo);
      if (postgres) samplers.postgresql = () => treeCpuSeconds(postgres);
    }
  }
  return samplers;
}
