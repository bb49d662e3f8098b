import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
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
 * The Node flags of `npm start` (the root package.json's start script, e.g.
 * `--max-semi-space-size=32 --heap-growing-percent=100`), so that a platform started here runs as
 * `npm start` runs it.
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
