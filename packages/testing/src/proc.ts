import { type ChildProcess, execFile, spawn } from "node:child_process";
import { appendFileSync, closeSync, existsSync, openSync, readFileSync, rmSync } from "node:fs";

/** The last `lines` lines of a log file, for error messages. */
export function tail(file: string, lines = 40): string {
  if (!existsSync(file)) return "(no log written)";
  const text = readFileSync(file, "utf8").trimEnd();
  if (!text) return "(log is empty)";
  return text.split("\n").slice(-lines).join("\n");
}

/** An error whose message ends with the tail of a log file. */
export function errorWithLog(message: string, logFile: string): Error {
  return new Error(`${message}\n--- last lines of ${logFile} ---\n${tail(logFile)}\n---`);
}

/**
 * Runs a command to completion with its output appended to `logFile`.
 * A missing executable gets its own message, since the usual cause is a
 * tool (go, java, mvn) that is not installed.
 */
export function runLogged(
  command: string,
  args: readonly string[],
  options: { cwd: string; logFile: string; env?: NodeJS.ProcessEnv; timeoutMs?: number; uid?: number; gid?: number },
): Promise<void> {
  return new Promise((resolve, reject) => {
    const fd = openSync(options.logFile, "a");
    let child: ChildProcess;
    try {
      child = spawn(command, args, {
        cwd: options.cwd,
        env: options.env ?? process.env,
        stdio: ["ignore", fd, fd],
        ...(options.uid === undefined ? {} : { uid: options.uid }),
        ...(options.gid === undefined ? {} : { gid: options.gid }),
      });
    } finally {
      closeSync(fd); // the child has its own copy
    }
    const timer =
      options.timeoutMs === undefined
        ? undefined
        : setTimeout(() => child.kill("SIGKILL"), options.timeoutMs);
    child.on("error", (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(
        error.code === "ENOENT"
          ? new Error(`\`${command}\` was not found on PATH; it is needed to prepare the test servers`)
          : error,
      );
    });
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve();
      else
        reject(
          errorWithLog(`\`${command} ${args.join(" ")}\` failed (${signal ?? `exit code ${code}`})`, options.logFile),
        );
    });
  });
}

/** Runs a short command and returns its stdout. */
export function runCapture(
  command: string,
  args: readonly string[],
  options: { cwd?: string; timeoutMs?: number } = {},
): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      command,
      args,
      { cwd: options.cwd, timeout: options.timeoutMs ?? 0, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error) {
          const code = (error as NodeJS.ErrnoException).code;
          reject(
            code === "ENOENT"
              ? new Error(`\`${command}\` was not found on PATH; it is needed to prepare the test servers`)
              : new Error(`\`${command} ${args.join(" ")}\` failed: ${error.message}\n${stderr}`),
          );
        } else resolve(stdout);
      },
    );
  });
}

/**
 * Watchdog run as a separate, detached Node process (argv: parent pid, child
 * pid, stop signal, directories to remove). If the parent dies without stopping the child —
 * Jest killed with SIGKILL, or Ctrl-C, where Node runs no exit handlers — it
 * is reparented, notices `process.ppid` changed, and stops the child and
 * removes its directories. It exits as soon as the child is gone.
 */
const REAPER = `
const [parent, child, signal, ...dirs] = process.argv.slice(1);
const alive = (pid) => { try { process.kill(pid, 0); return true; } catch (e) { return e.code === "EPERM"; } };
const cleanup = () => { for (const d of dirs) { try { require("fs").rmSync(d, { recursive: true, force: true }); } catch {} } };
const timer = setInterval(() => {
  if (!alive(+child)) { if (process.ppid !== +parent) cleanup(); process.exit(0); }
  if (process.ppid === +parent) return;
  clearInterval(timer);
  try { process.kill(+child, signal); } catch {}
  const deadline = Date.now() + 5000;
  const wait = setInterval(() => {
    if (alive(+child) && Date.now() < deadline) return;
    try { process.kill(+child, "SIGKILL"); } catch {}
    clearInterval(wait); cleanup(); process.exit(0);
  }, 200);
}, 500);
`;

/** A long-running server process whose output goes to a log file. */
export interface ManagedProcess {
  readonly pid: number;
  readonly logFile: string;
  /** Resolves when the process has exited, with its exit code (null if killed by a signal). */
  readonly exited: Promise<number | null>;
  running(): boolean;
  /** The stop signal, then SIGKILL after `graceMs`; then removes the cleanup directories. */
  stop(graceMs?: number): Promise<void>;
}

const live = new Set<{ pid: number; dirs: readonly string[]; exitSignal: NodeJS.Signals; running(): boolean }>();
let exitHookInstalled = false;

/**
 * Last line of defence for normal exits (including `process.exit()` from
 * Jest): kill whatever is still running. Exit handlers must be synchronous,
 * so there is no waiting: each process gets its `exitSignal` (SIGKILL unless
 * it needs another to end at once without leaving anything behind), and
 * its directories are removed with rmSync.
 */
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on("exit", () => {
    for (const p of live) {
      if (p.running()) {
        try {
          process.kill(p.pid, p.exitSignal);
        } catch {
          // already gone
        }
      }
      for (const dir of p.dirs) rmSync(dir, { recursive: true, force: true });
    }
  });
}

/**
 * Starts a server process in the background.
 *
 * `cleanupDirs` are removed once it has stopped (its data and run directory).
 * The child is unref'd so it never keeps Jest's or the CLI's event loop alive
 * by itself; its lifetime is bound to ours by stop(), the exit hook and the
 * reaper.
 *
 * `stopSignal` (default SIGTERM) is what stop() and the reaper send first:
 * PostgreSQL takes SIGTERM as "smart" shutdown, which waits for every client
 * to disconnect, so it is stopped with SIGINT ("fast": clients are cut off).
 * `exitSignal` (default SIGKILL) is what the exit hook sends: PostgreSQL
 * killed with SIGKILL leaves its System V shared memory segment behind, with
 * SIGQUIT ("immediate") it ends at once and removes it. `uid`/`gid` run the
 * process as another user (PostgreSQL refuses to run as root).
 */
export function startProcess(options: {
  command: string;
  args: readonly string[];
  cwd: string;
  logFile: string;
  env?: NodeJS.ProcessEnv;
  cleanupDirs?: readonly string[];
  stopSignal?: NodeJS.Signals;
  exitSignal?: NodeJS.Signals;
  uid?: number;
  gid?: number;
}): ManagedProcess {
  const dirs = options.cleanupDirs ?? [];
  const stopSignal = options.stopSignal ?? "SIGTERM";
  const fd = openSync(options.logFile, "a");
  let child: ChildProcess;
  try {
    child = spawn(options.command, options.args, {
      cwd: options.cwd,
      env: options.env ?? process.env,
      stdio: ["ignore", fd, fd],
      ...(options.uid === undefined ? {} : { uid: options.uid }),
      ...(options.gid === undefined ? {} : { gid: options.gid }),
    });
  } finally {
    closeSync(fd);
  }
  child.unref();

  let isRunning = child.pid !== undefined;
  const exited = new Promise<number | null>((resolve) => {
    child.once("exit", (code) => {
      isRunning = false;
      resolve(code);
    });
    child.once("error", (error) => {
      // spawn failed (e.g. ENOENT): there is no process to wait for; say why in the log
      try {
        appendFileSync(options.logFile, `could not start ${options.command}: ${error.message}\n`);
      } catch {
        // the run directory is already gone
      }
      isRunning = false;
      resolve(null);
    });
  });
  const pid = child.pid ?? -1;

  const reaper =
    pid > 0
      ? spawn(process.execPath, ["-e", REAPER, String(process.pid), String(pid), stopSignal, ...dirs], {
          detached: true, // own session: Ctrl-C on the terminal must not kill it
          stdio: "ignore",
        })
      : undefined;
  reaper?.unref();

  const entry = { pid, dirs, exitSignal: options.exitSignal ?? "SIGKILL", running: () => isRunning };
  live.add(entry);
  installExitHook();

  let stopping: Promise<void> | undefined;
  const stop = (graceMs = 5000): Promise<void> => {
    stopping ??= (async () => {
      if (isRunning) {
        child.kill(stopSignal);
        const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
        await exited;
        clearTimeout(timer);
      }
      try {
        reaper?.kill("SIGKILL");
      } catch {
        // already gone
      }
      for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
      live.delete(entry);
    })();
    return stopping;
  };

  return { pid, logFile: options.logFile, exited, running: () => isRunning, stop };
}

/**
 * Polls `check` until it returns true. Fails early, with the log tail, if the
 * server process exits, and after `timeoutMs` otherwise.
 */
export async function waitUntilReady(
  what: string,
  proc: ManagedProcess,
  check: () => Promise<boolean>,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (!proc.running()) {
      throw errorWithLog(`${what} exited during startup (exit code ${await proc.exited})`, proc.logFile);
    }
    try {
      if (await check()) return;
    } catch (error) {
      lastError = error;
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  const reason = lastError instanceof Error ? `; last error: ${lastError.message}` : "";
  throw errorWithLog(`${what} did not become ready within ${timeoutMs / 1000} s${reason}`, proc.logFile);
}
