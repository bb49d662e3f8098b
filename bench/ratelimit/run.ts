// Rate limiter benchmark: what a decision costs per request, with counters in
// memory and shared in the gateway's store, and what a counter costs in memory.
//
//   npm run bench:ratelimit -w @emailsvc/bench     (≈ 1 min; writes results/ratelimit.json and the README table)
//
// Each request is what the gateway's limitByKey asks: one unit from two
// budgets (per API key and per tenant), keys spread over 1,000 API keys of
// 100 tenants. "admitted": budgets large enough that nothing is refused (the
// steady state of normal traffic); "refused": one key over its budget (a
// flood); "new key": every request a key never seen (the first request of a
// key, or a guess from a new address). Store round trips are the shared
// store's own count of the operations it sent, so "round trips/request" is
// measured, not assumed. MongoDB here is FerretDB on SQLite (the test server; MONGO_URL
// when set, else started like the tests do), which says little about a real
// MongoDB's speed but exactly how many round trips a decision takes.

import { mkdirSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import {
  counterId,
  MemoryCounterStore,
  RateLimiter,
  SharedCounterStore,
  toMicros,
  type CounterStore,
  type RateLimitPolicy,
} from "@emailsvc/gateway";
import { openEmbeddedStore, openMongoStore, type DocumentStore } from "@emailsvc/storage";
import { ensureMongo } from "@emailsvc/testing";
import { describeMachine } from "../support/machine.js";
import { writeResultsBlock } from "../support/readme.js";

const benchRoot = path.join(__dirname, "..", ".."); // bench/dist/ratelimit -> bench
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const IN_FLIGHT = 16;

interface Cell {
  counters: string;
  scenario: string;
  in_flight: number;
  requests: number;
  requests_per_second: number;
  p50_us: number;
  p99_us: number;
  round_trips_per_request: number | null;
}

const OPEN: RateLimitPolicy = {
  budgets: [
    { rateClass: "read", kind: "api_key", limit: 1_000_000, windowMs: 3_600_000 },
    { rateClass: "read", kind: "tenant", limit: 1_000_000, windowMs: 3_600_000 },
  ],
};
const TIGHT: RateLimitPolicy = {
  budgets: [
    { rateClass: "read", kind: "api_key", limit: 5, windowMs: 3_600_000 },
    { rateClass: "read", kind: "tenant", limit: 1_000_000, windowMs: 3_600_000 },
  ],
};

type Scenario = "admitted" | "refused" | "new key";

const nowUs = () => Number(process.hrtime.bigint()) / 1000;
const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;

async function run(counters: string, scenario: Scenario, make: (policy: RateLimitPolicy) => { store: CounterStore; calls?: () => number }, inFlight: number): Promise<Cell> {
  const { store, calls } = make(scenario === "refused" ? TIGHT : OPEN);
  const limiter = new RateLimiter(scenario === "refused" ? TIGHT : OPEN, store);
  let sequence = 0;
  const keysFor = (i: number) =>
    scenario === "new key"
      ? { api_key: `key_new_${i}`, tenant: `acc_${i % 100}:live` }
      : scenario === "refused"
        ? { api_key: "key_flood", tenant: "acc_0:live" }
        : { api_key: `key_${i % 1000}`, tenant: `acc_${i % 100}:live` };
  // Warm-up: every key of the scenario seen once (the refused key spent).
  for (let i = 0; i < 1000; i += 1) await limiter.consume("read", keysFor(sequence++));
  const callsBefore = calls?.() ?? 0;
  const latencies: number[] = [];
  const started = nowUs();
  const deadline = started + SECONDS * 1e6;
  let refusedWrongly = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (nowUs() < deadline) {
        const t = nowUs();
        const decision = await limiter.consume("read", keysFor(sequence++));
        latencies.push(nowUs() - t);
        if (decision.allowed === (scenario === "refused")) refusedWrongly += 1;
      }
    }),
  );
  const seconds = (nowUs() - started) / 1e6;
  await limiter.close();
  if (refusedWrongly > 0) throw new Error(`${counters} ${scenario}: ${refusedWrongly} decisions not as the scenario expects`);
  latencies.sort((a, b) => a - b);
  const cell: Cell = {
    counters,
    scenario,
    in_flight: inFlight,
    requests: latencies.length,
    requests_per_second: Math.round(latencies.length / seconds),
    p50_us: Math.round(percentile(latencies, 50)),
    p99_us: Math.round(percentile(latencies, 99)),
    round_trips_per_request: calls ? Number(((calls() - callsBefore) / latencies.length).toFixed(2)) : null,
  };
  console.log(JSON.stringify(cell));
  return cell;
}

/**
 * Heap bytes per counter of the memory store (and of the shared store's
 * mirror): the Map entry, the TAT and the id string the limiter made, which
 * only the Map keeps once the request is over.
 */
function bytesPerCounter(count: number): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error("run with node --expose-gc (npm run bench:ratelimit does)");
  const budget = OPEN.budgets[0]!;
  const now = toMicros(Date.now());
  gc();
  const before = process.memoryUsage().heapUsed;
  const store = new MemoryCounterStore({ maxKeys: count });
  for (let i = 0; i < count; i += 1) store.consumeSync(counterId(budget, `key_${i}`), budget, now);
  gc();
  const after = process.memoryUsage().heapUsed;
  if (store.size !== count) throw new Error(`expected ${count} counters, got ${store.size}`);
  return Math.round((after - before) / count);
}

async function main(): Promise<void> {
  const cells: Cell[] = [];
  const memory = () => ({ store: new MemoryCounterStore() });
  for (const scenario of ["admitted", "refused", "new key"] as const) cells.push(await run("memory", scenario, memory, 1));

  const embedded = await openEmbeddedStore({});
  let n = 0;
  const shared = (base: DocumentStore) => () => {
    const store = new SharedCounterStore(base, { collection: `counters_${(n += 1)}`, timeoutMs: 10_000, sweepIntervalMs: 0 });
    return { store, calls: () => store.roundTrips };
  };
  for (const scenario of ["admitted", "refused", "new key"] as const) {
    cells.push(await run("shared, embedded store (NeDB in memory)", scenario, shared(embedded), IN_FLIGHT));
  }
  await embedded.close();

  const mongo = await ensureMongo();
  try {
    const store = await openMongoStore({ url: mongo.url, dbName: `bench_ratelimit_${Date.now().toString(36)}` });
    try {
      for (const scenario of ["admitted", "refused", "new key"] as const) {
        cells.push(await run("shared, MongoDB protocol (FerretDB 1.24.2/SQLite)", scenario, shared(store), IN_FLIGHT));
      }
      // For scale: one round trip of each kind a decision makes, one at a time.
      const probe = store.collection<{ _id: string; tat: number }>("probe");
      await probe.insertOne({ _id: "x", tat: 1 });
      const probes: Array<[string, () => Promise<unknown>]> = [
        ["one findOne by _id, for scale", () => probe.findOne({ _id: "x" })],
        ["one guarded $inc by _id (what an admitted request does per budget), for scale", () => probe.updateOne({ _id: "x", tat: { $gte: 0 } }, { $inc: { tat: 1 } })],
      ];
      for (const [scenario, op] of probes) {
        const lat: number[] = [];
        const end = nowUs() + SECONDS * 1e6;
        while (nowUs() < end) {
          const t = nowUs();
          await op();
          lat.push(nowUs() - t);
        }
        lat.sort((a, b) => a - b);
        cells.push({
          counters: "MongoDB protocol (FerretDB 1.24.2/SQLite)",
          scenario,
          in_flight: 1,
          requests: lat.length,
          requests_per_second: Math.round(lat.length / SECONDS),
          p50_us: Math.round(percentile(lat, 50)),
          p99_us: Math.round(percentile(lat, 99)),
          round_trips_per_request: 1,
        });
      }
    } finally {
      await store.close();
    }
  } finally {
    await mongo.stop();
  }

  const perCounter = bytesPerCounter(1_000_000);
  const machine = describeMachine();
  const resultsDir = path.join(benchRoot, "results");
  mkdirSync(resultsDir, { recursive: true });
  writeFileSync(
    path.join(resultsDir, "ratelimit.json"),
    JSON.stringify({ machine, seconds_per_cell: SECONDS, heap_bytes_per_counter: perCounter, cells }, null, 2) + "\n",
  );

  const header =
    `Measured ${machine.date.slice(0, 16).replace("T", " ")} UTC on ${machine.cpus} cores (${machine.cpu}), Node ${machine.node}, ` +
    `load average ${machine.loadavg_start.split(" ").slice(0, 3).join(" ")} at start (\`results/ratelimit.json\`). ` +
    `Each request takes one unit of two budgets (API key and tenant); ${SECONDS} s per row. ` +
    `Memory: **${perCounter} bytes of heap per counter** (1,000,000 counters: Map entry, TAT and the limiter's 35-character id).`;
  const rows = cells.map(
    (c) =>
      `| ${c.counters} | ${c.scenario} | ${c.in_flight} | ${c.requests_per_second.toLocaleString("en-US")} | ${c.p50_us} | ${c.p99_us} | ${c.round_trips_per_request ?? "—"} |`,
  );
  const table = ["| counters | requests | in flight | requests/s | p50 µs | p99 µs | store round trips/request |", "|---|---|---:|---:|---:|---:|---:|", ...rows].join("\n");
  writeResultsBlock(path.join(benchRoot, "README.md"), "ratelimit", "Rate limiter", `${header}\n\n${table}`);
  console.log(`${header}\n\n${table}`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
