// The platform as the benchmarks run it: `npm start` in a child process, or
// one process per service as a deployment runs them, and a small REST client.
import { join } from "node:path";
import { SERVICE_PROCESSES, startPlatformProcess, startServiceProcesses, type PlatformProcess, type ServiceProcessName } from "@emailsvc/testing";
import { cpuSeconds, peakRssMb } from "./process.js";

/** The repository's root (from bench/dist/support). */
export const REPO = join(__dirname, "..", "..", "..");
/** The admin token the benchmarks' platforms run with (ADMIN_TOKEN). */
export const ADMIN = "bench-admin-token-0123456789abcdef";

/** The platform as `npm start` runs it; BENCH_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof") profiles it. */
export function startPlatform(dataDir: string, env: Record<string, string>): Promise<PlatformProcess> {
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? "").split(" ").filter(Boolean);
  return startPlatformProcess(REPO, { DATA_DIR: dataDir, ADMIN_TOKEN: ADMIN, ...heapProfileEnv(), ...env }, { nodeArgs });
}

/** The settings of the heap profile and GC count preloads (./heap-profile.ts, ./gc-count.ts), when given: the kit passes the platform only what it is told. */
function heapProfileEnv(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of ["BENCH_HEAP_PROFILE_THREADS", "BENCH_HEAP_PROFILE_DIR", "BENCH_GC_THREADS", "BENCH_GC_DIR"]) if (process.env[name]) out[name] = process.env[name]!;
  return out;
}

/** One JSON call to the gateway with an API key (or the admin token); the answer's status and parsed body. */
export async function api(base: string, key: string, method: string, path: string, body?: unknown, admin = false): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = admin ? { authorization: `Bearer ${ADMIN}` } : { "x-api-key": key };
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(base + path, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** A running platform as a benchmark needs it: its gateway, its processes' peak memory and CPU, a drain. */
export interface Running {
  url: string;
  peakRssMb(): number;
  /** CPU seconds its processes have used so far. */
  cpuSeconds(): number;
  /** Each process's peak memory (MB) and CPU seconds so far, by name (`platform`, or the service). */
  perProcess(): Record<string, { peak_rss_mb: number; cpu_s: number }>;
  stop(): Promise<void>;
  /** kill -9 of every process: nothing gets a chance to write. */
  kill(): Promise<void>;
}

/** `npm start`: every service in one process. */
export async function oneProcess(dataDir: string, env: Record<string, string>): Promise<Running> {
  const p = await startPlatform(dataDir, env);
  return {
    url: p.url,
    peakRssMb: () => peakRssMb(p.child.pid!),
    cpuSeconds: () => cpuSeconds(p.child.pid!),
    perProcess: () => ({ platform: { peak_rss_mb: peakRssMb(p.child.pid!), cpu_s: cpuSeconds(p.child.pid!) } }),
    stop: () => p.stop(),
    kill: () => p.kill(),
  };
}

export const SERVICES = SERVICE_PROCESSES;
export type ServiceName = ServiceProcessName;

/** How processPerService runs the services beyond the environment they share (see the testing kit's startServiceProcesses). */
export interface PerServiceOptions {
  /** Each service's own settings (e.g. its MONGO_DB); every replica of a service gets the same. */
  own?: (service: ServiceName) => Record<string, string>;
  /** Processes per service (default 1); more than one needs MONGO_URL and KAFKA_BROKERS. */
  replicas?: Partial<Record<ServiceName, number>>;
}

/**
 * Every service in its own process, as a deployment runs them (each from its
 * own script, on the same DATA_DIR: one store folder per service; the portal,
 * which serves people's pages only, not), `env` for all, and `options` (each
 * service's own settings, replicas). BENCH_NODE_ARGS go to every process (one
 * CPU profile each). Peak memory is the sum of the processes' peaks;
 * `perProcess` names them `delivery`, `delivery#2`, ...
 */
export async function processPerService(dataDir: string, env: Record<string, string>, options: PerServiceOptions = {}): Promise<Running> {
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? "").split(" ").filter(Boolean);
  const own = (service: ServiceName) => ({ ...options.own?.(service), ...(service === "gateway" ? { ADMIN_TOKEN: ADMIN, RATE_LIMIT: "off" } : {}) });
  const { url, processes, stop, kill } = await startServiceProcesses(REPO, { DATA_DIR: dataDir, ...heapProfileEnv(), ...env }, { own, nodeArgs, ...(options.replicas ? { replicas: options.replicas } : {}) });
  const pids = processes.map(({ proc }) => proc.child.pid!);
  return {
    url,
    peakRssMb: () => pids.reduce((sum, pid) => sum + peakRssMb(pid), 0),
    cpuSeconds: () => pids.reduce((sum, pid) => sum + cpuSeconds(pid), 0),
    perProcess: () => Object.fromEntries(processes.map(({ name }, i) => [name, { peak_rss_mb: peakRssMb(pids[i]!), cpu_s: cpuSeconds(pids[i]!) }])),
    stop,
    kill,
  };
}
