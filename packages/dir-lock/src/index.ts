// @emailsvc/dir-lock: keeps a data directory to one process at a time.
//
// The embedded store (NeDB datafiles) and the durable in-process event bus
// (segment files) both assume they are the only writer of their directory: a
// second process appending to the same files would corrupt them silently. A
// lock file names its holder; a second process is kept out with an error that
// says who holds it, and a lock whose holder is gone is taken over.
//
//   const lock = await lockDir("data/bus/embedded", "event bus");
//   ...
//   await lock.release();
//
// Node has no flock(2) (and install scripts, so native addons, are blocked
// here), so the kernel cannot release the lock at death; instead the lock file
// proves who holds it, and a crashed holder is recognised as gone:
//
//  - The file holds the holder's pid, its start time (field 22 of
//    /proc/<pid>/stat, clock ticks since boot) and the machine's boot id. A pid
//    alone is not enough: `kill(pid, 0)` calls a zombie alive, and a killed
//    process stays one while its threads are torn down (seconds after a
//    `kill -9` of `npm start`); in a container restarted in a new PID
//    namespace the same pid belongs to another process, which would keep the
//    lock held for ever.
//  - The holder counts as alive only if /proc/<pid>/stat exists, the process
//    is neither a zombie nor dead (state Z or X) nor exiting (PF_EXITING in
//    its flags: a `kill -9` is being carried out), its start time is the one
//    in the lock, and the boot id is this boot's.
//  - A holder that still looks alive is waited for (`waitMs`, default 10 s)
//    before the lock is refused: a supervisor restarting the platform right
//    after killing it gets a start, not an error.
//  - The file is written whole before it appears (a temporary file linked to
//    its name), so a reader never sees it half-written.
// Without /proc (not Linux), the holder counts as alive while `kill(pid, 0)`
// finds it, as before.
//
// Limits: it is advisory (a process that ignores it is not stopped); it
// guards one machine (a directory shared over a network file system by two
// hosts is not protected: the other host's holder has another boot id); two
// processes taking over the same stale lock in the same instant could both
// succeed; a write the killed holder's last thread was inside of may still
// land while its leader is already a zombie. It guards against starting a
// second instance by mistake and against a crash keeping the next start out,
// not against an adversary.

import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { link, readFile, rm, writeFile } from "node:fs/promises";
import * as path from "node:path";

/** The name of the lock file inside a locked directory. */
export const LOCK_FILE = ".lock";

/** How long a holder that looks alive is waited for, by default. */
export const DEFAULT_LOCK_WAIT_MS = 10_000;

export interface DirLock {
  /** The lock file. */
  readonly file: string;
  /** Removes the lock file; idempotent. */
  release(): Promise<void>;
}

export interface LockOptions {
  /** How long to wait for a holder that looks alive before refusing (default 10 s; 0: refuse at once). */
  waitMs?: number;
  /** How often the holder is looked at again while waiting (default 100 ms). */
  pollMs?: number;
}

/** Who holds a lock, as its file says. */
export interface LockHolder {
  pid: number;
  /** Start time of the process in clock ticks since boot (/proc/<pid>/stat field 22); absent in a lock written without /proc or by an older version. */
  start?: string | undefined;
  /** /proc/sys/kernel/random/boot_id of the machine it ran on. */
  boot?: string | undefined;
}

/**
 * Takes the lock of `dir` (which must exist) for this process. `what` names
 * the owner kind in the error, e.g. "embedded store" or "event bus". Waits up
 * to `waitMs` for a holder that looks alive; rejects if it still does then.
 */
export async function lockDir(dir: string, what: string, options: LockOptions = {}): Promise<DirLock> {
  const file = path.join(dir, LOCK_FILE);
  const waitMs = options.waitMs ?? DEFAULT_LOCK_WAIT_MS;
  const pollMs = options.pollMs ?? 100;
  const deadline = Date.now() + waitMs;
  const content = `${JSON.stringify(thisProcess())}\n`;
  for (;;) {
    if (await create(file, content)) {
      let released: Promise<void> | undefined;
      return { file, release: () => (released ??= rm(file, { force: true })) };
    }
    const text = await readFile(file, "utf8").catch((error: NodeJS.ErrnoException) => {
      if (error.code === "ENOENT") return undefined; // released meanwhile: try again
      throw error;
    });
    if (text === undefined) continue;
    const holder = parseHolder(text);
    if (holder === undefined || !holderIsAlive(holder)) {
      // Gone (or a file no holder wrote): the lock is stale.
      await rm(file, { force: true });
      continue;
    }
    if (Date.now() >= deadline) throw new Error(`${what} ${dir} is in use by process ${holder.pid} (lock file ${file})`);
    await new Promise((resolve) => setTimeout(resolve, Math.max(1, Math.min(pollMs, deadline - Date.now()))));
  }
}

/** Creates the lock file with its whole content, or answers false when it exists. */
async function create(file: string, content: string): Promise<boolean> {
  const temporary = `${file}.${process.pid}.${randomBytes(4).toString("hex")}`;
  await writeFile(temporary, content, { flag: "wx" });
  try {
    await link(temporary, file);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw error;
  } finally {
    await rm(temporary, { force: true });
  }
}

/** The holder a lock file names: this format, or an older version's bare pid; undefined for anything else. */
export function parseHolder(text: string): LockHolder | undefined {
  const trimmed = text.trim();
  if (/^\d+$/.test(trimmed)) return { pid: Number(trimmed) };
  try {
    const parsed = JSON.parse(trimmed) as Partial<Record<keyof LockHolder, unknown>>;
    if (!Number.isSafeInteger(parsed.pid) || (parsed.pid as number) <= 0) return undefined;
    return {
      pid: parsed.pid as number,
      start: typeof parsed.start === "string" ? parsed.start : undefined,
      boot: typeof parsed.boot === "string" ? parsed.boot : undefined,
    };
  } catch {
    return undefined;
  }
}

/** This process as a lock file names it. */
export function thisProcess(): LockHolder {
  const stat = readStat(process.pid);
  return { pid: process.pid, ...(stat ? { start: stat.start } : {}), ...(bootId() !== undefined ? { boot: bootId() } : {}) };
}

/** PF_EXITING (include/linux/sched.h): the task is in do_exit, e.g. carrying out a SIGKILL. */
const PF_EXITING = 0x4;

/**
 * Whether the holder is a live process that is the one that wrote the lock.
 * Our own pid is a leftover of an earlier run (containers reuse pid 1):
 * callers keep their own record of what this process has open.
 */
export function holderIsAlive(holder: LockHolder): boolean {
  if (holder.pid === process.pid) return false;
  if (!procAvailable()) return killZeroFinds(holder.pid);
  if (holder.boot !== undefined && bootId() !== undefined && holder.boot !== bootId()) return false;
  const stat = readStat(holder.pid);
  if (stat === undefined) return false;
  if (stat.state === "Z" || stat.state === "X" || stat.state === "x" || (stat.flags & PF_EXITING) !== 0) return false;
  return holder.start === undefined || holder.start === stat.start;
}

interface ProcStat {
  state: string;
  flags: number;
  start: string;
}

/** /proc/<pid>/stat: state (field 3), flags (9), start time (22); undefined when there is no such process. */
function readStat(pid: number): ProcStat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // Field 2, the command name in parentheses, may itself hold spaces and parentheses: fields 3 on follow the last ")".
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  const [state, flags, start] = [fields[0], fields[6], fields[19]];
  if (state === undefined || flags === undefined || start === undefined) return undefined;
  return { state, flags: Number(flags), start };
}

let procChecked: boolean | undefined;
function procAvailable(): boolean {
  procChecked ??= readStat(process.pid) !== undefined;
  return procChecked;
}

let boot: string | null | undefined;
function bootId(): string | undefined {
  if (boot === undefined) {
    try {
      boot = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim() || null;
    } catch {
      boot = null;
    }
  }
  return boot ?? undefined;
}

function killZeroFinds(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
