import { spawn, type ChildProcess } from "node:child_process";

// Child processes for the crash tests: a service (or the whole platform) run
// from its built entry point, killed with SIGKILL, started again on the same
// DATA_DIR. Used by services/delivery/test/crash.test.ts and
// embedded/test/restart.test.ts.

/** Resolves once `condition` holds; fails after `timeoutMs` naming `what`. Not a measure of speed. */
export async function poll(condition: () => Promise<boolean>, what: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Resolves once the child has exited (at once if it already has). */
export function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once("exit", () => resolve()));
}

/**
 * Starts `node <script>` with exactly `env` (nothing inherited), and resolves
 * once `ready` answers true; if the child exits first, fails with its output.
 */
export async function startNode(
  script: string,
  env: Record<string, string>,
  ready: () => Promise<boolean>,
  what: string,
  timeoutMs = 30_000,
): Promise<ChildProcess> {
  const child = spawn(process.execPath, [script], { env, stdio: ["ignore", "pipe", "pipe"] });
  const output: string[] = [];
  child.stdout!.on("data", (d) => output.push(String(d)));
  child.stderr!.on("data", (d) => output.push(String(d)));
  await poll(
    async () => {
      if (child.exitCode !== null) throw new Error(`${script} exited early:\n${output.join("")}`);
      try {
        return await ready();
      } catch {
        return false; // not listening yet
      }
    },
    what,
    timeoutMs,
  );
  return child;
}

/** Stops a child that is still running (SIGTERM) and waits for it. */
export async function stopChild(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  child.kill("SIGTERM");
  await exited(child);
}
