// Event bus benchmark: publish and consume throughput of the in-process bus,
// memory only against durable (segment files; fsync "interval", the default,
// and fsync "always"). The question it answers: can the embedded mode's bus
// carry a campaign's fan-out (100,000 send requests in 30 s, ≈ 3,300 events/s)
// without being the bottleneck?
//
//   npm run bench:bus -w @emailsvc/bench     (≈ 1–2 min; writes results/bus.json and the README table)
//
// Events look like delivery's `email.send.requested`: key `eml_` + 26 chars,
// a 96-byte value (the protobuf is about that), headers event-id and
// event-type. Each cell uses a fresh bus (and directory, under the OS temp
// directory); handlers do nothing, so the figures are the bus' own cost.
// Cells with a fixed count time the whole count; open-ended ones stop after
// BENCH_SECONDS (default 3).

import { randomBytes } from "node:crypto";
import { execSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { InProcessEventBus, type EventBus, type FsyncPolicy, type OutgoingEvent } from "@emailsvc/events";
import { describeMachine } from "../support/machine.js";
import { writeResultsBlock } from "../support/readme.js";

const benchRoot = path.join(__dirname, "..", ".."); // bench/dist/bus -> bench
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const FANOUT = 100_000;
const TOPIC = "email.send.requested";

type Setup = { name: string; durable: false } | { name: string; durable: true; fsync: FsyncPolicy };
const SETUPS: Setup[] = [
  { name: "memory only", durable: false },
  { name: "durable, fsync interval (default)", durable: true, fsync: "interval" },
  { name: "durable, fsync always", durable: true, fsync: "always" },
];

interface Cell {
  bus: string;
  scenario: string;
  events: number;
  seconds: number;
  events_per_second: number;
  p50_ms: number | null;
  p99_ms: number | null;
}

const round = (n: number, digits = 3) => Number(n.toFixed(digits));
const now = () => Number(process.hrtime.bigint()) / 1e6;

function event(i: number): OutgoingEvent {
  const id = String(i).padStart(26, "0");
  return { key: `eml_${id}`, value: randomBytes(96), headers: { "event-id": `evt_${id}`, "event-type": TOPIC } };
}

/** A pool of events, reused (the bus copies them), so that building them is not measured. */
const POOL = Array.from({ length: 10_000 }, (_, i) => event(i));
const pick = (i: number) => POOL[i % POOL.length]!;

class Buses {
  private dirs: string[] = [];

  async open(setup: Setup, dir?: string): Promise<{ bus: EventBus; dir: string }> {
    if (!setup.durable) return { bus: new InProcessEventBus({ retention: 10 * FANOUT, logger: () => {} }), dir: "" };
    const where = dir ?? mkdtempSync(path.join(tmpdir(), "bench-bus-"));
    if (!dir) this.dirs.push(where);
    const bus = await InProcessEventBus.open({ dir: where, fsync: setup.fsync, logger: () => {} });
    return { bus, dir: where };
  }

  cleanUp(): void {
    for (const dir of this.dirs) rmSync(dir, { recursive: true, force: true });
    this.dirs = [];
  }
}

function cell(setup: Setup, scenario: string, events: number, ms: number, latencies?: number[]): Cell {
  let p50: number | null = null;
  let p99: number | null = null;
  if (latencies && latencies.length > 0) {
    latencies.sort((a, b) => a - b);
    p50 = round(latencies[Math.floor(latencies.length * 0.5)]!, 3);
    p99 = round(latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * 0.99))]!, 3);
  }
  const result = { bus: setup.name, scenario, events, seconds: round(ms / 1000, 2), events_per_second: Math.round(events / (ms / 1000)), p50_ms: p50, p99_ms: p99 };
  console.log(JSON.stringify(result));
  return result;
}

/** Publishes `count` events in batches of `size`, one batch at a time. */
async function publishBatches(bus: EventBus, count: number, size: number, from = 0): Promise<void> {
  for (let i = 0; i < count; i += size) {
    const batch: OutgoingEvent[] = [];
    for (let j = i; j < Math.min(count, i + size); j++) batch.push(pick(from + j));
    await bus.publish(TOPIC, batch);
  }
}

/** Resolves once `count` events reached a group subscribed now (fromBeginning). */
async function consume(bus: EventBus, count: number, group: string): Promise<void> {
  let handled = 0;
  let done = () => {};
  const finished = new Promise<void>((resolve) => (done = resolve));
  const subscription = await bus.subscribe({
    group,
    topics: [TOPIC],
    handler: async () => {
      if (++handled === count) done();
    },
  });
  await finished;
  await subscription.stop();
}

async function scenarios(setup: Setup, buses: Buses): Promise<Cell[]> {
  const cells: Cell[] = [];
  const fresh = async () => {
    const opened = await buses.open(setup);
    await opened.bus.ensureTopics([TOPIC]);
    return opened;
  };

  {
    const { bus } = await fresh();
    await publishBatches(bus, 2_000, 100); // warm-up
    const t0 = now();
    await publishBatches(bus, FANOUT, 100);
    cells.push(cell(setup, "publish, batches of 100", FANOUT, now() - t0));
    await bus.close();
  }
  {
    // The outbox relay's way: one event per publish, many requests at once.
    const { bus } = await fresh();
    let next = 0;
    const latencies: number[] = [];
    const deadline = now() + SECONDS * 1000;
    const t0 = now();
    await Promise.all(
      Array.from({ length: 64 }, async () => {
        while (now() < deadline && next < FANOUT) {
          const i = next++;
          const started = now();
          await bus.publish(TOPIC, [pick(i)]);
          latencies.push(now() - started);
        }
      }),
    );
    cells.push(cell(setup, "publish, 1 event per call, 64 calls in flight", latencies.length, now() - t0, latencies));
    await bus.close();
  }
  {
    const { bus } = await fresh();
    const latencies: number[] = [];
    const deadline = now() + SECONDS * 1000;
    const t0 = now();
    for (let i = 0; now() < deadline && i < FANOUT; i++) {
      const started = now();
      await bus.publish(TOPIC, [pick(i)]);
      latencies.push(now() - started);
    }
    cells.push(cell(setup, "publish, 1 event per call, one at a time", latencies.length, now() - t0, latencies));
    await bus.close();
  }
  {
    // A backlog: published, (durable: the process restarted,) then consumed.
    let { bus, dir } = await fresh();
    await publishBatches(bus, FANOUT, 100);
    if (setup.durable) {
      await bus.close();
      const t0 = now();
      ({ bus } = await buses.open(setup, dir));
      cells.push(cell(setup, `reopen with ${FANOUT.toLocaleString("en")} events retained (recovery scan)`, FANOUT, now() - t0));
    }
    const t0 = now();
    await consume(bus, FANOUT, "backlog");
    cells.push(cell(setup, "consume a backlog, one group", FANOUT, now() - t0));
    await bus.close();
  }
  {
    // The campaign fan-out: published in batches while one group consumes.
    const { bus } = await fresh();
    const t0 = now();
    const consumed = consume(bus, FANOUT, "fanout");
    await publishBatches(bus, FANOUT, 100);
    const published = now() - t0;
    await consumed;
    cells.push(cell(setup, "fan-out: publish in batches of 100 while one group consumes (until all handled)", FANOUT, now() - t0));
    console.log(JSON.stringify({ fanout_publish_seconds: round(published / 1000, 2) }));
    await bus.close();
  }
  buses.cleanUp();
  return cells;
}

function fileSystemOf(dir: string): string {
  try {
    return execSync(`df -T ${JSON.stringify(dir)} | tail -1`, { encoding: "utf8" }).trim().split(/\s+/)[1] ?? "unknown";
  } catch {
    return "unknown";
  }
}

async function main(): Promise<void> {
  const machine = {
    ...describeMachine(),
    temp_dir: tmpdir(),
    file_system: fileSystemOf(tmpdir()),
  };
  console.log(JSON.stringify(machine));
  const buses = new Buses();
  const cells: Cell[] = [];
  for (const setup of SETUPS) cells.push(...(await scenarios(setup, buses)));

  const resultsDir = path.join(benchRoot, "results");
  mkdirSync(resultsDir, { recursive: true });
  writeFileSync(path.join(resultsDir, "bus.json"), JSON.stringify({ machine, seconds_per_open_cell: SECONDS, cells }, null, 2) + "\n");

  const header =
    `Measured ${machine.date.slice(0, 16).replace("T", " ")} UTC on ${machine.cpus} cores (${machine.cpu}), Node ${machine.node}, ` +
    `load average ${machine.loadavg_start.split(" ").slice(0, 3).join(" ")} at start; bus directory on ${machine.file_system} (${machine.temp_dir}). ` +
    `Events of ${POOL[0]!.value.length} B with a 30-char key and two headers; handlers do nothing.`;
  const rows = cells.map(
    (c) =>
      `| ${c.bus} | ${c.scenario} | ${c.events.toLocaleString("en")} | ${c.seconds} | ${c.events_per_second.toLocaleString("en")} | ${c.p50_ms ?? "—"} | ${c.p99_ms ?? "—"} |`,
  );
  const table = ["| bus | scenario | events | s | events/s | p50 ms | p99 ms |", "|---|---|---:|---:|---:|---:|---:|", ...rows].join("\n");
  writeResultsBlock(path.join(benchRoot, "README.md"), "bus", "Event bus (in-process)", `${header}\n\n${table}`);
  console.log("updated README.md");
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
