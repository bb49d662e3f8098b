import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { basename, dirname, join } from "node:path";
import { info } from "./log.js";

/**
 * Root of everything this package builds or downloads. It lives outside the
 * repository (binaries and jars must never land in git) and survives between
 * runs, which is what makes the second run take seconds instead of minutes.
 */
export function cacheRoot(): string {
  const explicit = process.env.EMAILSVC_CACHE_DIR;
  if (explicit) return explicit;
  const xdg = process.env.XDG_CACHE_HOME || join(homedir(), ".cache");
  return join(xdg, "emailsvc");
}

/** True if the process exists (signal 0 only checks). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM means it exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Longer than the slowest build (the Go build is capped at 30 minutes). */
const STALE_LOCK_MS = 45 * 60_000;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Takes an exclusive lock for building `name`, so that two test runs starting
 * at once on a cold machine (two cores) do not both spend minutes compiling
 * the same thing. The lock is a directory (mkdir is atomic) holding the owner's
 * pid; a lock whose owner died (killed build) is taken over.
 */
async function lock(
  lockDir: string,
  done: () => boolean,
  staleMs = STALE_LOCK_MS,
  what = `which is building ${basename(lockDir, ".lock")}`,
): Promise<(() => Promise<void>) | undefined> {
  let announced = false;
  for (;;) {
    try {
      await mkdir(lockDir);
      await writeFile(join(lockDir, "pid"), String(process.pid));
      return () => rm(lockDir, { recursive: true, force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    // Someone else holds (or held) the lock.
    if (done()) return undefined;
    const owner = Number(await readFile(join(lockDir, "pid"), "utf8").catch(() => ""));
    // A lock older than any build is stale even if its pid is alive: the cache
    // may have been restored on another machine (CI cache) where that pid is
    // an unrelated process.
    const age = Date.now() - ((await stat(lockDir).catch(() => undefined))?.mtimeMs ?? Date.now());
    if (owner && (!alive(owner) || age > staleMs)) {
      await rm(lockDir, { recursive: true, force: true });
      continue;
    }
    if (!owner) {
      // The owner may be between mkdir and writing its pid; give it a moment,
      // but do not wait forever on a lock left empty by a crash at that point.
      await sleep(1000);
      if (!existsSync(join(lockDir, "pid")) && !done()) await rm(lockDir, { recursive: true, force: true });
      continue;
    }
    if (!announced) {
      info(`waiting for process ${owner}, ${what}`);
      announced = true;
    }
    await sleep(1000);
  }
}

/**
 * Takes a lock on something the machine has only one of (e.g. the tests'
 * Kubernetes node, with its fixed addresses and host firewall chains): a
 * directory holding the owner's pid, waited for while that process lives,
 * taken over when it died. Returns the release function.
 */
export async function machineLock(lockDir: string, what: string): Promise<() => Promise<void>> {
  const release = await lock(lockDir, () => false, Number.POSITIVE_INFINITY, what);
  return release!;
}

/**
 * Returns `<cacheRoot>/<name>`, building it first if it does not exist.
 *
 * `build` fills a fresh temporary directory next to the final one; only when
 * it succeeds is that directory renamed into place. Rename is atomic on one
 * file system, so the final directory either does not exist or is complete:
 * a build killed halfway leaves only a `*.tmp-*` directory, removed by the
 * next build.
 */
export async function ensureCachedDir(
  name: string,
  build: (tmpDir: string) => Promise<void>,
): Promise<{ dir: string; built: boolean }> {
  const root = cacheRoot();
  const dir = join(root, name);
  if (existsSync(dir)) return { dir, built: false };

  await mkdir(root, { recursive: true });
  const unlock = await lock(join(root, `${name}.lock`), () => existsSync(dir));
  if (!unlock) return { dir, built: false }; // another process built it meanwhile
  try {
    if (existsSync(dir)) return { dir, built: false };
    // Leftovers of killed builds: safe to remove, since we hold the lock.
    for (const entry of await readdir(dirname(dir))) {
      if (entry.startsWith(`${name}.tmp-`)) await rm(join(root, entry), { recursive: true, force: true });
    }
    const tmp = `${dir}.tmp-${process.pid}-${randomBytes(4).toString("hex")}`;
    await mkdir(tmp);
    try {
      await build(tmp);
      await rename(tmp, dir);
    } catch (error) {
      await rm(tmp, { recursive: true, force: true });
      throw error;
    }
    return { dir, built: true };
  } finally {
    await unlock();
  }
}
