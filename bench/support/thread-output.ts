// Where a measuring preload (./heap-profile.ts, ./gc-count.ts) writes for the
// thread it is loaded in: Node runs `--require` preloads in every worker
// thread too, and each thread of `npm start` is named by its service
// (its workerData), the process's own thread `main`.
import { mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isMainThread, threadId, workerData } from "node:worker_threads";

/**
 * The file this thread writes (`<dir>/<thread>-<pid><extension>`), or
 * undefined when the thread is not among those named in `threadsVar`
 * (comma-separated; `defaultThreads` when unset). The folder is `dirVar`'s,
 * else `<tmp>/<defaultDir>`, made when needed.
 */
export function threadOutputFile(threadsVar: string, defaultThreads: string, dirVar: string, defaultDir: string, extension: string): string | undefined {
  const name = isMainThread ? "main" : ((workerData as { name?: string } | null)?.name ?? `thread-${threadId}`);
  if (!(process.env[threadsVar] ?? defaultThreads).split(",").includes(name)) return undefined;
  const dir = process.env[dirVar] ?? join(tmpdir(), defaultDir);
  mkdirSync(dir, { recursive: true });
  return join(dir, `${name}-${process.pid}${extension}`);
}
