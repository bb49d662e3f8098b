// @emailsvc/dir-lock: keeps a data directory to one process at a time.
//
// The embedded store (NeDB datafiles) and the durable in-process event bus
// (segment files) both assume they are the only writer of their directory: a
// second process appending to the same files would corrupt them silently. A
// lock file holding the owner's pid keeps a second process out with an error
// that says who holds it; a lock whose process is gone (kill -9, power loss)
// is taken over.
//
//   const lock = await lockDir("data/bus/embedded", "event bus");
//   ...
//   await lock.release();
//
// Limits: it is advisory (a process that ignores it is not stopped); a pid
// reused by an unrelated process after a crash makes the lock look held (the
// error names the pid and the file, so an operator can check and remove it);
// two processes taking over the same stale lock in the same instant could both
// succeed. It guards against starting a second instance by mistake, not
// against an adversary.

import { open, readFile, rm } from "node:fs/promises";
import * as path from "node:path";

/** The name of the lock file inside a locked directory. */
export const LOCK_FILE = ".lock";

export interface DirLock {
  /** The lock file. */
  readonly file: string;
  /** Removes the lock file; idempotent. */
  release(): Promise<void>;
}

/**
 * Takes the lock of `dir` (which must exist) for this process. `what` names
 * the owner kind in the error, e.g. "embedded store" or "event bus".
 * Rejects when another live process holds it.
 */
export async function lockDir(dir: string, what: string): Promise<DirLock> {
  const file = path.join(dir, LOCK_FILE);
  for (let attempt = 0; attempt < 2; attempt += 1) {
    try {
      const handle = await open(file, "wx");
      try {
        await handle.writeFile(`${process.pid}\n`);
      } finally {
        await handle.close();
      }
      let released: Promise<void> | undefined;
      return {
        file,
        release: () => (released ??= rm(file, { force: true })),
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    const owner = Number.parseInt(await readFile(file, "utf8").catch(() => ""), 10);
    // Our own pid in the file is a leftover of an earlier run (containers reuse
    // pid 1): callers keep their own record of what this process has open.
    if (Number.isInteger(owner) && owner !== process.pid && isAlive(owner)) {
      throw new Error(`${what} ${dir} is in use by process ${owner} (lock file ${file})`);
    }
    await rm(file, { force: true });
  }
  throw new Error(`could not lock ${what} ${dir}`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
