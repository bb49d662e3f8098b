// Where a thread's bytes go: a sampling heap profile that keeps the objects
// garbage collection has already freed, so that it counts what was allocated
// (the young generation's garbage included), not only what is still live.
//
// A preload: `BENCH_NODE_ARGS="--require <repo>/bench/dist/support/heap-profile.js"`
// reaches the platform's process and every worker thread it starts (Node runs
// preloads in workers too). The thread(s) named in BENCH_HEAP_PROFILE_THREADS
// (a service's thread name, or `main`: a process's own thread, which is the
// service's in one process per service; default `delivery`) write their profile
// every 3 s to BENCH_HEAP_PROFILE_DIR (default `<tmp>/emailsvc-heap-profile`)
// as `<thread>-<pid>.heapprofile`, which Chrome's DevTools opens; ./platform.ts
// passes these two variables on. Only for measuring: it slows the thread down.
//
// `node bench/dist/support/heap-profile.js <file> [recipients]` summarises
// one: bytes (per recipient) by function, and by the nearest function of our
// own code (services/, packages/, embedded/), which names the caller of a
// builtin such as `Object.entries`.
import { readFileSync, writeFileSync } from "node:fs";
import { Session } from "node:inspector";
import { threadOutputFile } from "./thread-output.js";

interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: ProfileNode[];
}

function startProfiling(): void {
  const file = threadOutputFile("BENCH_HEAP_PROFILE_THREADS", "delivery", "BENCH_HEAP_PROFILE_DIR", "emailsvc-heap-profile", ".heapprofile");
  if (!file) return;
  const session = new Session();
  session.connect();
  // One sample per 4 KiB allocated on average (V8's default is 32 KiB): enough for functions allocating a few hundred bytes a message.
  session.post("HeapProfiler.startSampling", { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
  // Written as it goes: a worker thread may be ended without an exit event.
  const write = () =>
    session.post("HeapProfiler.getSamplingProfile", (err, result) => {
      if (!err) writeFileSync(file, JSON.stringify(result.profile));
    });
  setInterval(write, 3000).unref();
  process.on("exit", write);
}

const shortUrl = (url: string) => (url.includes("/dist/") ? url.slice(url.lastIndexOf("/dist/") + 6) : url.slice(url.lastIndexOf("/") + 1));
const ownCode = (url: string) => /\/(services|packages|embedded)\//.test(url) && !url.includes("node_modules");

function summarise(file: string, recipients: number): void {
  const { head } = JSON.parse(readFileSync(file, "utf8")) as { head: ProfileNode };
  const byFunction = new Map<string, number>();
  const byOwnCaller = new Map<string, number>();
  let total = 0;
  let profiler = 0;
  const add = (map: Map<string, number>, key: string, bytes: number) => map.set(key, (map.get(key) ?? 0) + bytes);
  const stack: Array<[ProfileNode, string, boolean]> = [[head, "(outside our code)", false]];
  while (stack.length > 0) {
    const [node, caller, ofProfiler] = stack.pop()!;
    const { functionName, url, lineNumber } = node.callFrame;
    // The profiler's own writes (this file, the inspector) are left out.
    const mine = ofProfiler || url.endsWith("heap-profile.js") || url === "node:inspector";
    const name = `${functionName || "(anonymous)"} ${shortUrl(url)}:${lineNumber + 1}`;
    const owner = ownCode(url) ? name : caller;
    if (mine) profiler += node.selfSize;
    else {
      total += node.selfSize;
      add(byFunction, name, node.selfSize);
      add(byOwnCaller, owner, node.selfSize);
    }
    for (const child of node.children) stack.push([child, owner, mine]);
  }
  const per = (bytes: number) => (bytes / recipients).toFixed(0).padStart(8);
  const top = (map: Map<string, number>) => [...map].sort((a, b) => b[1] - a[1]).slice(0, 40);
  console.log(`${(total / 1e6).toFixed(1)} MB sampled (the profiler's own ${(profiler / 1e6).toFixed(1)} MB left out); bytes per ${recipients === 1 ? "run" : "recipient"}:`);
  console.log("\nby function (its own allocations):");
  for (const [key, bytes] of top(byFunction)) console.log(`${per(bytes)}  ${key}`);
  console.log("\nby the nearest function of our own code:");
  for (const [key, bytes] of top(byOwnCaller)) console.log(`${per(bytes)}  ${key}`);
}

if (require.main === module) {
  const [file, recipients] = process.argv.slice(2);
  if (!file) {
    console.error("usage: node bench/dist/support/heap-profile.js <file.heapprofile> [recipients]");
    process.exit(2);
  }
  summarise(file, Number(recipients ?? 1) || 1);
} else {
  startProfiling();
}
