import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { freePort } from "./ports.js";

/** A Node.js script of the repository running as a child process, as an operator runs it. */
export interface NodeProcess {
  child: ChildProcess;
  /** Its stdout and stderr so far. */
  output: string[];
  exited: Promise<number | null>;
  /** SIGTERM (a drain), then waits for the exit. */
  stop(): Promise<void>;
  /** kill -9: no chance to write anything. */
  kill(): Promise<void>;
}

/** `npm start` (embedded/dist/main.js) as a child process. */
export interface PlatformProcess extends NodeProcess {
  /** The gateway, `http://127.0.0.1:<GATEWAY_PORT>`. */
  url: string;
  /** The portal page, `http://127.0.0.1:<PORTAL_PORT>`. */
  portalUrl: string;
}

/**
 * Starts `script` (a path under `repoRoot`) with `env` (PATH, LOG_LEVEL=warn
 * and METRICS_PORT=0 added) and, given `readyUrl`, resolves once that answers
 * 200. `nodeArgs` go before the script (e.g. `--cpu-prof`).
 */
export async function startNodeProcess(
  repoRoot: string,
  script: string,
  env: Record<string, string>,
  options: { nodeArgs?: readonly string[]; readyUrl?: string; readyAttempts?: number } = {},
): Promise<NodeProcess> {
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), join(repoRoot, script)], {
    env: { PATH: process.env.PATH ?? "", LOG_LEVEL: "warn", METRICS_PORT: "0", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const output: string[] = [];
  child.stdout!.on("data", (d) => output.push(String(d)));
  child.stderr!.on("data", (d) => output.push(String(d)));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  const end = async (signal: NodeJS.Signals) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    await exited;
  };
  const proc: NodeProcess = { child, output, exited, stop: () => end("SIGTERM"), kill: () => end("SIGKILL") };
  if (!options.readyUrl) return proc;
  for (let i = 0; i < (options.readyAttempts ?? 1200); i++) {
    if (child.exitCode !== null) throw new Error(`${script} exited:\n${output.join("")}`);
    try {
      if ((await fetch(options.readyUrl)).status === 200) return proc;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await proc.kill();
  throw new Error(`${script} did not become ready:\n${output.join("")}`);
}

/**
 * The Node flags of `npm start` (the root package.json's start script; none
 * today: the heap settings are set by the process itself, packages/runtime's
 * heap.ts), so that a platform started here runs as `npm start` runs it.
 */
export function npmStartNodeArgs(repoRoot: string): string[] {
  const scripts = (JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { scripts?: Record<string, string> }).scripts ?? {};
  const match = /\bnode((?:\s+--\S+)*)\s+embedded\/dist\/main\.js/.exec(scripts.start ?? "");
  if (!match) throw new Error("the root package.json's start script does not run node … embedded/dist/main.js");
  return match[1]!.trim().split(/\s+/).filter(Boolean);
}

/**
 * Starts the platform from the repository's built `embedded/dist/main.js`
 * with `npm start`'s Node flags (then `options.nodeArgs`), GATEWAY_PORT and
 * PORTAL_PORT free ports unless given, and resolves once its gateway answers
 * /readyz.
 */
export async function startPlatformProcess(
  repoRoot: string,
  env: Record<string, string>,
  options: { nodeArgs?: readonly string[]; readyAttempts?: number } = {},
): Promise<PlatformProcess> {
  const port = env.GATEWAY_PORT ?? String(await freePort());
  const url = `http://127.0.0.1:${port}`;
  const portalPort = env.PORTAL_PORT ?? String(await freePort());
  const proc = await startNodeProcess(
    repoRoot,
    join("embedded", "dist", "main.js"),
    { ...env, GATEWAY_PORT: port, PORTAL_PORT: portalPort },
    { ...options, nodeArgs: [...npmStartNodeArgs(repoRoot), ...(options.nodeArgs ?? [])], readyUrl: `${url}/readyz` },
  );
  return { ...proc, url, portalUrl: `http://127.0.0.1:${portalPort}` };
}

/** The services a deployment runs, each from its own script (`services/<name>/dist/main.js`), in start order. */
export const SERVICE_PROCESSES = ["subscribers", "templates", "delivery", "campaigns", "webhooks", "gateway"] as const;
export type ServiceProcessName = (typeof SERVICE_PROCESSES)[number];

/** Every service in its own process: the gateway's URL, the processes, stop and kill of them all. */
export interface ServiceProcesses {
  /** The gateway, `http://127.0.0.1:<GATEWAY_PORT>`. */
  url: string;
  /** In start order; `name` is the service, `delivery#2` for its second replica. */
  processes: Array<{ name: string; service: ServiceProcessName; proc: NodeProcess }>;
  /** SIGTERM to every process (each drains), then waits for them. */
  stop(): Promise<void>;
  /** kill -9 of every process. */
  kill(): Promise<void>;
}

/**
 * Starts every service from its own script, as a deployment runs them, on
 * `env` (DATA_DIR, MONGO_URL, KAFKA_BROKERS, ...) with each service's URL
 * and port, `own(service)` on top for each, and `replicas` of some: each
 * replica its own process and gRPC port, with the same settings. The gateway
 * calls the first replica of each service; the others share the work through
 * the event bus's consumer groups and the store's leases and claims, so more
 * than one needs MONGO_URL and KAFKA_BROKERS (an embedded store and the
 * in-process bus are locked to one process). Resolves once the gateway
 * answers /readyz; rejects with its output when a process exits before.
 */
export async function startServiceProcesses(
  repoRoot: string,
  env: Record<string, string>,
  options: { own?: (service: ServiceProcessName) => Record<string, string>; replicas?: Partial<Record<ServiceProcessName, number>>; nodeArgs?: readonly string[] } = {},
): Promise<ServiceProcesses> {
  const own = options.own ?? (() => ({}));
  const replicasOf = (service: ServiceProcessName) => options.replicas?.[service] ?? 1;
  if (SERVICE_PROCESSES.some((service) => replicasOf(service) > 1) && (!env.MONGO_URL || !env.KAFKA_BROKERS)) {
    throw new Error("replicas need MONGO_URL and KAFKA_BROKERS (an embedded store and the in-process bus are one process's)");
  }
  const ports = Object.fromEntries(await Promise.all(SERVICE_PROCESSES.map(async (service) => [service, await freePort()] as const))) as Record<ServiceProcessName, number>;
  const urls = {
    SUBSCRIBERS_URL: `http://127.0.0.1:${ports.subscribers}`,
    TEMPLATES_URL: `http://127.0.0.1:${ports.templates}`,
    DELIVERY_URL: `http://127.0.0.1:${ports.delivery}`,
    CAMPAIGNS_URL: `http://127.0.0.1:${ports.campaigns}`,
    WEBHOOKS_URL: `http://127.0.0.1:${ports.webhooks}`,
  };
  const url = `http://127.0.0.1:${ports.gateway}`;
  const processes: ServiceProcesses["processes"] = [];
  const all = (end: (p: NodeProcess) => Promise<void>) => async () => {
    await Promise.all(processes.map(({ proc }) => end(proc)));
  };
  const started: ServiceProcesses = { url, processes, stop: all((p) => p.stop()), kill: all((p) => p.kill()) };
  try {
    for (const service of SERVICE_PROCESSES) {
      for (let replica = 1; replica <= replicasOf(service); replica++) {
        const port = replica === 1 ? ports[service] : await freePort();
        const listen: Record<string, string> = service === "gateway" ? { GATEWAY_PORT: String(port) } : { GRPC_PORT: String(port) };
        const proc = await startNodeProcess(repoRoot, join("services", service, "dist", "main.js"), { ...urls, ...env, ...own(service), ...listen }, { nodeArgs: options.nodeArgs ?? [] });
        processes.push({ name: replica === 1 ? service : `${service}#${replica}`, service, proc });
        // The next replica starts once this one listens, having created its collections, indexes and topics:
        // FerretDB 1.24 (the tests' MongoDB) panics on some of those requests made by two processes at once.
        if (replica < replicasOf(service)) await untilListening(port, proc, `${service}#${replica}`);
      }
    }
    // Ready once the gateway answers /readyz; a process that exited meanwhile fails the start with its output.
    for (let attempt = 0; ; attempt++) {
      const dead = processes.find(({ proc }) => proc.child.exitCode !== null || proc.child.signalCode !== null);
      if (dead) throw new Error(`${dead.name} exited:\n${dead.proc.output.join("")}`);
      try {
        if ((await fetch(`${url}/readyz`)).status === 200) break;
      } catch {
        // not listening yet
      }
      if (attempt >= 1200) throw new Error(`the gateway did not become ready:\n${processes.map(({ name, proc }) => `${name}: ${proc.output.join("")}`).join("\n")}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } catch (error) {
    await started.stop();
    throw error;
  }
  return started;
}

/** Resolves once `port` on 127.0.0.1 accepts connections; rejects with the process's output when it exits first. */
async function untilListening(port: number, proc: NodeProcess, name: string): Promise<void> {
  for (let attempt = 0; attempt < 1200; attempt++) {
    if (proc.child.exitCode !== null || proc.child.signalCode !== null) throw new Error(`${name} exited:\n${proc.output.join("")}`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect({ port, host: "127.0.0.1" }, () => {
        socket.destroy();
        resolve(true);
      });
      socket.on("error", () => resolve(false));
    });
    if (open) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${name} did not listen on ${port}:\n${proc.output.join("")}`);
}
