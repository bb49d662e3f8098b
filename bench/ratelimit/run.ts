// Rate-limiting benchmark: what the gateway's limiter costs per request, with
// counters in memory (the default) and shared by replicas in a document store
// (RATE_LIMIT_STORE=mongo), and what its memory holds.
//
//   npm run bench:ratelimit -w @emailsvc/bench    (≈ 1 min; writes results/ratelimit.json and the README table)
//
// Each request is what the gateway does for an API-key operation: the key's
// and the tenant's budget of one class, charged together (RateLimiter.admit);
// plus, for a credential that fails, the charge to the client address's
// failure budget (authFailed: a hash of the address and a GCRA step). The shared
// store runs on the embedded store (in memory) and on the
// MongoDB-compatible server of MONGO_URL (else the test setup's FerretDB).
// Open-ended cells stop after BENCH_SECONDS (default 3).

import { mkdirSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { DocumentCounterStore, loadRateLimitConfig, MemoryCounterStore, RateLimiter } from "@emailsvc/gateway";
import { openEmbeddedStore, openMongoStore, type DocumentStore, type MongoDocumentStore } from "@emailsvc/storage";
import { ensureMongo } from "@emailsvc/testing";
import { describeMachine } from "../support/machine.js";
import { writeResultsBlock } from "../support/readme.js";
import { percentile } from "../support/stats.js";

const benchRoot = path.join(__dirname, "..", ".."); // bench/dist/ratelimit -> bench
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const CONCURRENCY = 16;

interface Cell {
  store: string;
  scenario: string;
  requests: number;
  requests_per_second: number;
  /** Per request, as the gateway awaits it. */
  p50_us: number;
  p99_us: number;
  /** Store operations (inserts, updates, reads) per request; null for memory. */
  store_ops_per_request: number | null;
  admitted: number;
}

const round = (n: number, digits = 1) => Number(n.toFixed(digits));
const nowUs = () => Number(process.hrtime.bigint()) / 1000;

/** Runs `op` from `concurrency` loops for SECONDS. */
async function load(op: (i: number) => Promise<boolean>, concurrency = 1): Promise<{ latencies: number[]; admitted: number; seconds: number }> {
  const latencies: number[] = [];
  let admitted = 0;
  let counter = 0;
  const started = nowUs();
  const deadline = started + SECONDS * 1e6;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (nowUs() < deadline) {
        const t0 = nowUs();
        if (await op(counter++)) admitted++;
        latencies.push(nowUs() - t0);
      }
    }),
  );
  return { latencies: latencies.sort((a, b) => a - b), admitted, seconds: (nowUs() - started) / 1e6 };
}

function cell(store: string, scenario: string, r: Awaited<ReturnType<typeof load>>, ops: number | null): Cell {
  return {
    store,
    scenario,
    requests: r.latencies.length,
    requests_per_second: Math.round(r.latencies.length / r.seconds),
    p50_us: round(percentile(r.latencies, 50)),
    p99_us: round(percentile(r.latencies, 99)),
    store_ops_per_request: ops === null ? null : round(ops / r.latencies.length, 2),
    admitted: r.admitted,
  };
}

/** Budgets nobody reaches (for the admitted path) or tiny ones (for the refused path). */
const HUGE = loadRateLimitConfig({ RATE_LIMIT_READ: "1000000/1s", RATE_LIMIT_TENANT_READ: "1000000/1s", RATE_LIMIT_AUTH_FAILURES: "1000000/1s" });
const TINY = loadRateLimitConfig({ RATE_LIMIT_READ: "5/1h", RATE_LIMIT_TENANT_READ: "10/1h", RATE_LIMIT_AUTH_FAILURES: "5/1h" });

const identity = (i: number) => ({ accountId: `acc_${i % 100}`, mode: "live" as const, keyId: `key_${i}` });

async function memoryCells(): Promise<Cell[]> {
  const cells: Cell[] = [];
  const store = "memory (default)";
  // 1,000 keys of 100 tenants, as a busy gateway sees them.
  const admitted = new RateLimiter(HUGE, new MemoryCounterStore());
  cells.push(cell(store, "admit (key + tenant), 1,000 keys", await load(async (i) => (await admitted.admit(identity(i % 1000), "read"))!.allowed), null));
  const refused = new RateLimiter(TINY, new MemoryCounterStore());
  for (let i = 0; i < 10; i++) await refused.admit(identity(0), "read");
  cells.push(cell(store, "refuse (budget spent)", await load(async () => (await refused.admit(identity(0), "read"))!.allowed), null));
  const guard = new RateLimiter(HUGE, new MemoryCounterStore());
  cells.push(
    cell(store, "failed authentication charged to its address (hash + GCRA)", await load(async (i) => (await guard.authFailed(`203.0.${(i >> 8) & 255}.${i & 255}`))!.allowed), null),
  );
  return cells;
}

/** Heap held per remembered budget, and the bound under a flood of distinct addresses. */
async function memoryFootprint(): Promise<{
  bytes_per_budget: number;
  flood: { addresses: number; max_keys: number; kept: number; heap_mb: number; seconds: number };
}> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error("run with node --expose-gc (npm run bench:ratelimit does)");
  const policy = { limit: 20, windowMs: 60_000 };
  gc();
  const before = process.memoryUsage().heapUsed;
  const held = new MemoryCounterStore({ maxKeys: 200_000 });
  const t = Date.now();
  // Keys shaped like the failure budgets' (a: and a 22-character hash).
  for (let i = 0; i < 100_000; i++) held.consumeNow([{ key: `a:${String(i).padStart(22, "x")}`, policy }], t);
  gc();
  const bytesPerBudget = Math.round((process.memoryUsage().heapUsed - before) / held.size);

  // Bad-key guesses from a million addresses within one window: bounded by maxKeys.
  const flood = new MemoryCounterStore({ maxKeys: 100_000 });
  const limiter = new RateLimiter(TINY, flood);
  const started = Date.now();
  for (let i = 0; i < 1_000_000; i++) await limiter.authFailed(`198.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
  const seconds = round((Date.now() - started) / 1000, 2);
  gc();
  return {
    bytes_per_budget: bytesPerBudget,
    flood: { addresses: 1_000_000, max_keys: flood.maxKeys, kept: flood.size, heap_mb: round(process.memoryUsage().heapUsed / 2 ** 20), seconds },
  };
}

async function sharedCells(name: string, open: () => Promise<DocumentStore>): Promise<Cell[]> {
  const cells: Cell[] = [];
  const stores = [await open(), await open()];
  const opened: DocumentCounterStore[] = [];
  const counters = async (collection: string, storeIndex = 0) => {
    const c = await DocumentCounterStore.open(stores[storeIndex]!, { collection, sweepIntervalMs: 0, timeoutMs: 30_000 });
    opened.push(c);
    return c;
  };
  const ops = (...cs: DocumentCounterStore[]) => cs.reduce((sum, c) => sum + c.stats.operations, 0);
  const run = Date.now().toString(36);
  try {
    // For scale: the cheapest query there is, on the same server and connection.
    {
      const docs = stores[0]!.collection<{ _id: string; n: number }>(`rl_bench_${run}_probe`);
      for (let i = 0; i < 100; i++) await docs.insertOne({ _id: `d${i}`, n: i });
      const r = await load(async (i) => (await docs.findOne({ _id: `d${i % 100}` })) !== null);
      cells.push(cell(name, "for scale: findOne by _id (no limiter), one at a time", r, r.latencies.length));
    }
    // One replica, one request at a time, 1,000 keys of 100 tenants.
    {
      const c = await counters(`rl_bench_${run}_a`);
      const limiter = new RateLimiter(HUGE, c);
      for (let i = 0; i < 1000; i++) await limiter.admit(identity(i), "read"); // first sight of each bucket
      const before = ops(c);
      const r = await load(async (i) => (await limiter.admit(identity(i % 1000), "read"))!.allowed);
      cells.push(cell(name, "admit (key + tenant), 1 replica, one at a time", r, ops(c) - before));
    }
    // One replica, 16 in flight.
    {
      const c = await counters(`rl_bench_${run}_b`);
      const limiter = new RateLimiter(HUGE, c);
      for (let i = 0; i < 1000; i++) await limiter.admit(identity(i), "read");
      const before = ops(c);
      const r = await load(async (i) => (await limiter.admit(identity(i % 1000), "read"))!.allowed, CONCURRENCY);
      cells.push(cell(name, `admit (key + tenant), 1 replica, ${CONCURRENCY} in flight`, r, ops(c) - before));
    }
    // Two replicas taking turns on the same budgets: each finds the other moved them.
    {
      const a = await counters(`rl_bench_${run}_c`, 0);
      const b = await counters(`rl_bench_${run}_c`, 1);
      const la = new RateLimiter(HUGE, a);
      const lb = new RateLimiter(HUGE, b);
      for (let i = 0; i < 100; i++) await la.admit(identity(i), "read");
      const before = ops(a, b);
      const r = await load(async (i) => (await (i % 2 ? lb : la).admit(identity(Math.floor(i / 2) % 100), "read"))!.allowed);
      cells.push(cell(name, "admit (key + tenant), 2 replicas taking turns on the same budgets", r, ops(a, b) - before));
    }
    // A flood of refused requests, after each replica has learned the budget is spent.
    {
      const a = await counters(`rl_bench_${run}_d`, 0);
      const b = await counters(`rl_bench_${run}_d`, 1);
      const la = new RateLimiter(TINY, a);
      const lb = new RateLimiter(TINY, b);
      for (let i = 0; i < 20; i++) await (i % 2 ? lb : la).admit(identity(0), "read");
      const before = ops(a, b);
      const r = await load(async (i) => (await (i % 2 ? lb : la).admit(identity(0), "read"))!.allowed);
      cells.push(cell(name, "refuse (budget spent), 2 replicas", r, ops(a, b) - before));
    }
  } finally {
    await Promise.all(opened.map((c) => c.close()));
    await Promise.all(stores.map((s) => s.close()));
  }
  return cells;
}

async function main(): Promise<void> {
  const machine = describeMachine();
  console.log(JSON.stringify(machine));
  const cells: Cell[] = [];
  cells.push(...(await memoryCells()));
  const footprint = await memoryFootprint();
  console.log(JSON.stringify(footprint));

  cells.push(...(await sharedCells("shared, embedded store (in memory)", () => openEmbeddedStore())));
  const mongo = await ensureMongo();
  let server = "MongoDB protocol";
  try {
    const dbName = `rl_bench_${Date.now().toString(36)}`;
    const probe = (await openMongoStore({ url: mongo.url, dbName })) as MongoDocumentStore;
    // The adapter serializes updates on FerretDB (it does not isolate them): say which it is.
    server = probe.serializeUpdates ? "shared, FerretDB (MongoDB protocol, updates serialized per process)" : "shared, MongoDB";
    await probe.close();
    cells.push(...(await sharedCells(server, () => openMongoStore({ url: mongo.url, dbName }))));
  } finally {
    await mongo.stop();
  }
  for (const c of cells) console.log(JSON.stringify(c));

  const resultsDir = path.join(benchRoot, "results");
  mkdirSync(resultsDir, { recursive: true });
  writeFileSync(
    path.join(resultsDir, "ratelimit.json"),
    JSON.stringify({ machine, seconds_per_cell: SECONDS, mongo_source: mongo.source, footprint, cells }, null, 2) + "\n",
  );

  const header =
    `Measured ${machine.date.slice(0, 16).replace("T", " ")} UTC on ${machine.cpus} cores (${machine.cpu}), Node ${machine.node}, ` +
    `load average ${machine.loadavg_start.split(" ").slice(0, 3).join(" ")} at start; ${SECONDS} s per cell; MongoDB-protocol server from ${mongo.source}. ` +
    `Memory: ${footprint.bytes_per_budget} bytes of heap per remembered budget (100,000 budgets); ` +
    `${footprint.flood.addresses.toLocaleString("en")} failed authentications from as many addresses kept ${footprint.flood.kept.toLocaleString("en")} budgets ` +
    `(RATE_LIMIT_MAX_KEYS ${footprint.flood.max_keys.toLocaleString("en")}), heap ${footprint.flood.heap_mb} MiB after.`;
  const us = (n: number) => (n < 100 ? n.toFixed(1) : Math.round(n).toLocaleString("en"));
  const rows = cells.map(
    (c) =>
      `| ${c.store} | ${c.scenario} | ${c.requests_per_second.toLocaleString("en")} | ${us(c.p50_us)} | ${us(c.p99_us)} | ${c.store_ops_per_request ?? "—"} |`,
  );
  const table = ["| counters | scenario | requests/s | p50 µs | p99 µs | store ops per request |", "|---|---|---:|---:|---:|---:|", ...rows].join("\n");
  writeResultsBlock(path.join(benchRoot, "README.md"), "ratelimit", "Rate limiting", `${header}\n\n${table}`);
  console.log("updated README.md");
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
