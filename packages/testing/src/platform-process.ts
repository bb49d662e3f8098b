import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { freePort } from "./ports.js";

/** `npm start` (embedded/dist/main.js) running as a child process, as an operator runs it. */
export interface PlatformProcess {
  child: ChildProcess;
  /** The gateway, `http://127.0.0.1:<GATEWAY_PORT>`. */
  url: string;
  /** Its stdout and stderr so far. */
  output: string[];
  exited: Promise<number | null>;
  /** SIGTERM (a drain), then waits for the exit. */
  stop(): Promise<void>;
  /** kill -9: no chance to write anything. */
  kill(): Promise<void>;
}

/**
 * Starts the platform from the repository's built `embedded/dist/main.js`
 * with `env` (PATH, LOG_LEVEL=warn and METRICS_PORT=0 added; GATEWAY_PORT a
 * free port unless given) and resolves once its gateway answers /readyz.
 * `nodeArgs` go before the script (e.g. `--cpu-prof`).
 */
export async function startPlatformProcess(
  repoRoot: string,
  env: Record<string, string>,
  options: { nodeArgs?: readonly string[]; readyAttempts?: number } = {},
): Promise<PlatformProcess> {
  const port = env.GATEWAY_PORT ?? String(await freePort());
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), join(repoRoot, "embedded", "dist", "main.js")], {
    env: { PATH: process.env.PATH ?? "", LOG_LEVEL: "warn", METRICS_PORT: "0", ...env, GATEWAY_PORT: port },
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
  const url = `http://127.0.0.1:${port}`;
  const platform: PlatformProcess = { child, url, output, exited, stop: () => end("SIGTERM"), kill: () => end("SIGKILL") };
  for (let i = 0; i < (options.readyAttempts ?? 1200); i++) {
    if (child.exitCode !== null) throw new Error(`the platform exited:\n${output.join("")}`);
    try {
      if ((await fetch(`${url}/readyz`)).status === 200) return platform;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await platform.kill();
  throw new Error(`the platform did not become ready:\n${output.join("")}`);
}
