// The platform as the benchmarks run it: `npm start` in a child process, or
// one process per service as a deployment runs them, and a small REST client.
import { join } from "node:path";
import { freePort, startNodeProcess, startPlatformProcess, type NodeProcess, type PlatformProcess } from "@emailsvc/testing";
import { cpuSeconds, peakRssMb } from "./process.js";

/** The repository's root (from bench/dist/support). */
export const REPO = join(__dirname, "..", "..", "..");
/** The admin token the benchmarks' platforms run with (ADMIN_TOKEN). */
export const ADMIN = "bench-admin-token-0123456789abcdef";

/** The platform as `npm start` runs it; BENCH_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof") profiles it. */
export function startPlatform(dataDir: string, env: Record<string, string>): Promise<PlatformProcess> {
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? "").split(" ").filter(Boolean);
  return startPlatformProcess(REPO, { DATA_DIR: dataDir, ADMIN_TOKEN: ADMIN, ...env }, { nodeArgs });
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

export const SERVICES = ["subscribers", "templates", "delivery", "campaigns", "webhooks", "gateway"] as const;
export type ServiceName = (typeof SERVICES)[number];

/**
 * Every service in its own process, as a deployment runs them (each from its
 * own script, on the same DATA_DIR: one store folder per service; the portal,
 * which serves people's pages only, not), `env` for
 * all and `own(service)` for each (e.g. its MONGO_DB). Peak memory is the sum
 * of the processes' peaks.
 */
export async function processPerService(dataDir: string, env: Record<string, string>, own: (service: ServiceName) => Record<string, string> = () => ({})): Promise<Running> {
  const ports = { subscribers: await freePort(), templates: await freePort(), delivery: await freePort(), campaigns: await freePort(), webhooks: await freePort(), gateway: await freePort() };
  const urls = {
    SUBSCRIBERS_URL: `http://127.0.0.1:${ports.subscribers}`,
    TEMPLATES_URL: `http://127.0.0.1:${ports.templates}`,
    DELIVERY_URL: `http://127.0.0.1:${ports.delivery}`,
    CAMPAIGNS_URL: `http://127.0.0.1:${ports.campaigns}`,
    WEBHOOKS_URL: `http://127.0.0.1:${ports.webhooks}`,
  };
  const started: NodeProcess[] = [];
  const names: ServiceName[] = [];
  const stop = async () => {
    await Promise.all(started.map((p) => p.stop()));
  };
  const kill = async () => {
    await Promise.all(started.map((p) => p.kill()));
  };
  const url = `http://127.0.0.1:${ports.gateway}`;
  try {
    const start = async (service: ServiceName, extra: Record<string, string>, readyUrl?: string) => {
      started.push(await startNodeProcess(REPO, join("services", service, "dist", "main.js"), { DATA_DIR: dataDir, ...urls, ...env, ...own(service), ...extra }, readyUrl ? { readyUrl } : {}));
      names.push(service);
    };
    for (const service of ["subscribers", "templates", "delivery", "campaigns", "webhooks"] as const) await start(service, { GRPC_PORT: String(ports[service]) });
    await start("gateway", { GATEWAY_PORT: String(ports.gateway), ADMIN_TOKEN: ADMIN, RATE_LIMIT: "off" }, `${url}/readyz`);
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    url,
    peakRssMb: () => started.reduce((sum, p) => sum + peakRssMb(p.child.pid!), 0),
    cpuSeconds: () => started.reduce((sum, p) => sum + cpuSeconds(p.child.pid!), 0),
    perProcess: () => Object.fromEntries(started.map((p, i) => [names[i]!, { peak_rss_mb: peakRssMb(p.child.pid!), cpu_s: cpuSeconds(p.child.pid!) }])),
    stop,
    kill,
  };
}
