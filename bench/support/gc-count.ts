// Bytes a thread allocated, its collections and its CPU, without slowing it
// down as the heap profile does (./heap-profile.ts says where the bytes go;
// this says how many, run after run).
//
// A preload: `BENCH_NODE_ARGS="--require <repo>/bench/dist/support/gc-count.js"`.
// The threads named in BENCH_GC_THREADS (default `delivery,campaigns`; `main`
// for a process's own thread) write `<thread>-<pid>.json` every 2 s to
// BENCH_GC_DIR (default `<tmp>/emailsvc-gc-count`): `allocated` bytes (the used
// heap before each collection less after the one before, as
// `--trace-gc-nvp`'s `allocated`, from v8.GCProfiler), `scavenges`,
// `markCompacts`, `pauseMs` (the thread's pauses by collection type),
// `promoted` and `survived` (bytes young-generation collections moved to the
// old generation and kept in the young one, summed), `cpuSeconds` of the
// thread (/proc/thread-self/stat, Linux), `waitSeconds` it spent ready to run
// but waiting for a core (/proc/thread-self/schedstat) and its `tid`; the
// process's own thread (`main`) also writes every thread of the process
// (`threads`: tid, cpuSeconds, waitSeconds), V8's and libuv's helper threads
// among them (those whose tid no JS thread wrote). All counted from the
// thread's start. Only for measuring.
import { readdirSync, readlinkSync, writeFileSync } from "node:fs";
import { isMainThread } from "node:worker_threads";
import { GCProfiler, getHeapStatistics } from "node:v8";
import { cpuSecondsOf, waitSecondsOf } from "./process.js";
import { threadOutputFile } from "./thread-output.js";

/** A /proc reading, or undefined where there is none (off Linux). */
function orUndefined<T>(read: () => T): T | undefined {
  try {
    return read();
  } catch {
    return undefined;
  }
}

function ownTid(): number | undefined {
  return orUndefined(() => Number(readlinkSync("/proc/thread-self").split("/").pop()));
}

/** Every thread of the process, for the process's own thread to write. */
function processThreads(): Array<{ tid: number; cpuSeconds?: number; waitSeconds?: number }> {
  return (orUndefined(() => readdirSync("/proc/self/task")) ?? []).map((tid) => ({
    tid: Number(tid),
    cpuSeconds: orUndefined(() => cpuSecondsOf(`/proc/self/task/${tid}`)),
    waitSeconds: orUndefined(() => waitSecondsOf(`/proc/self/task/${tid}`)),
  }));
}

type HeapAtCollection = ReturnType<GCProfiler["stop"]>["statistics"][number]["beforeGC"];

/** Bytes used in one heap space (old_space, new_space, …) before or after a collection. */
function spaceUsed(heap: HeapAtCollection, name: string): number {
  return heap.heapSpaceStatistics.find((space) => space.spaceName === name)?.spaceUsedSize ?? 0;
}

function startCounting(): void {
  const file = threadOutputFile("BENCH_GC_THREADS", "delivery,campaigns", "BENCH_GC_DIR", "emailsvc-gc-count", ".json");
  if (!file) return;
  let allocated = 0;
  let scavenges = 0;
  let markCompacts = 0;
  /** Milliseconds of the thread's pauses, by collection type (GCProfiler's cost; a collection's concurrent part on helper threads is not in it). */
  const pauseMs: Record<string, number> = {};
  /** Bytes young-generation collections moved to the old generation, and left in the young one (summed over collections). */
  let promoted = 0;
  let survived = 0;
  let lastAfter = getHeapStatistics().used_heap_size;
  const tid = ownTid();
  let profiler = new GCProfiler();
  profiler.start();
  // GCProfiler answers only when stopped: stopped and started again at each write.
  const write = () => {
    const { statistics } = profiler.stop();
    profiler = new GCProfiler();
    profiler.start();
    for (const gc of statistics) {
      allocated += Math.max(0, gc.beforeGC.heapStatistics.usedHeapSize - lastAfter);
      lastAfter = gc.afterGC.heapStatistics.usedHeapSize;
      pauseMs[gc.gcType] = (pauseMs[gc.gcType] ?? 0) + gc.cost / 1000;
      if (gc.gcType === "Scavenge") {
        promoted += Math.max(0, spaceUsed(gc.afterGC, "old_space") - spaceUsed(gc.beforeGC, "old_space"));
        survived += spaceUsed(gc.afterGC, "new_space");
      }
      if (gc.gcType === "MarkSweepCompact") markCompacts += 1;
      else if (gc.gcType === "Scavenge" || gc.gcType === "MinorMarkCompact") scavenges += 1;
    }
    const own = {
      cpuSeconds: orUndefined(() => cpuSecondsOf("/proc/thread-self")),
      waitSeconds: orUndefined(() => waitSecondsOf("/proc/thread-self")),
      tid,
      ...(isMainThread ? { threads: processThreads() } : {}),
    };
    writeFileSync(file, JSON.stringify({ allocated, scavenges, markCompacts, pauseMs, promoted, survived, ...own }));
  };
  setInterval(write, 2000).unref();
  process.on("exit", write);
}

startCounting();
