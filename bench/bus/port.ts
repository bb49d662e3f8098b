// The bus across threads, as `npm start` runs it: a worker thread publishes
// send requests through PortEventBus (pages of 1,000, as the campaigns
// dispatcher does) and consumes them back (batches of 500, as delivery's
// intake does), while the main thread holds the durable in-process bus and
// one group of its own (as the webhooks service consumes there). The figure
// is CPU per event by thread (/proc/self/task/<tid>/stat): the main thread's
// is what the bus costs the thread that also serves the gateway and the
// subscribers' lookups.
//
//   node bench/dist/bus/port.js                       this build, 5 rounds of 100,000 events
//   PORT_BENCH_BASE=<another checkout> node bench/dist/bus/port.js
//                                                     that checkout's @emailsvc/events build and this one, alternating
//
// Not written to the README by itself: "The bus and the ledger" quotes it.

import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { isMainThread, MessageChannel, parentPort, Worker, workerData, type MessagePort } from "node:worker_threads";

const N = Number(process.env.PORT_BENCH_N ?? 100_000);
const ROUNDS = Number(process.env.PORT_BENCH_ROUNDS ?? 5);
const PAGE = 1000;
const OWN_EVENTS = path.join(__dirname, "..", "..", "..", "packages", "events", "dist", "index.js");

type Events = typeof import("@emailsvc/events");

/** CPU seconds of one thread of this process. */
function threadCpu(tid: number): number {
  const stat = readFileSync(`/proc/self/task/${tid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** One round in this process: main thread CPU and the rest of the process's, per event (µs). */
async function round(eventsModule: string): Promise<{ main: number; others: number }> {
  const events = require(eventsModule) as Events;
  const dir = mkdtempSync(path.join(tmpdir(), "port-bench-"));
  const bus = await events.InProcessEventBus.open({ dir, logger: () => undefined });
  try {
    await bus.ensureTopics(["email.send.requested"]);
    let local = 0;
    await bus.subscribe({ group: "local", topics: ["email.send.requested"], maxBatch: 500, batchHandler: async (batch) => void (local += batch.length) });
    const channel = new MessageChannel();
    const served = events.exposeBus(bus, channel.port1);
    const main0 = threadCpu(process.pid);
    const process0 = process.cpuUsage();
    const worker = new Worker(__filename, { workerData: { port: channel.port2, eventsModule }, transferList: [channel.port2] });
    await new Promise((resolve, reject) => worker.once("message", resolve).once("error", reject));
    while (local < N) await new Promise((resolve) => setTimeout(resolve, 5));
    const main = threadCpu(process.pid) - main0;
    const used = process.cpuUsage(process0);
    await served.stop();
    await worker.terminate();
    return { main: (main / N) * 1e6, others: ((used.user + used.system) / 1e6 - main) / N * 1e6 };
  } finally {
    await bus.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The worker: publishes N events in pages and waits until its group has them all. */
async function workerSide(): Promise<void> {
  const { port, eventsModule } = workerData as { port: MessagePort; eventsModule: string };
  const events = require(eventsModule) as Events;
  const bus = new events.PortEventBus(port);
  let got = 0;
  const all = new Promise<void>((resolve) => {
    void bus.subscribe({
      group: "worker",
      topics: ["email.send.requested"],
      maxBatch: 500,
      batchHandler: async (batch) => {
        // Reads what a handler reads (the value, the key, a header).
        for (const event of batch) if (event.value.length + event.key.length + (event.headers["event-id"]?.length ?? 0) === 0) throw new Error("empty");
        got += batch.length;
        if (got >= N) resolve();
      },
    });
  });
  const value = new Uint8Array(216).fill(7); // about an email.send.requested
  for (let i = 0; i < N; i += PAGE) {
    const page = [];
    for (let j = i; j < Math.min(N, i + PAGE); j++) {
      const id = String(j).padStart(26, "0");
      page.push({ key: `sub_${id}`, value: value.slice(), headers: { "event-id": `evt_${id}`, "event-type": "email.send.requested" } });
    }
    await bus.publish("email.send.requested", page);
  }
  await all;
  parentPort!.postMessage("done");
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function main(): void {
  if (process.argv[2] === "--round") {
    void round(process.argv[3]!).then((r) => process.stdout.write(JSON.stringify(r)));
    return;
  }
  const base = process.env.PORT_BENCH_BASE;
  const builds: Array<[string, string]> = [["this build", OWN_EVENTS]];
  if (base) builds.unshift(["base", path.join(base, "packages", "events", "dist", "index.js")]);
  const results = new Map<string, Array<{ main: number; others: number }>>(builds.map(([name]) => [name, []]));
  for (let i = 0; i < ROUNDS; i++) {
    for (const [name, module] of builds) {
      // Each round in a process of its own, alternating, so both see the same machine.
      const child = spawnSync(process.execPath, [__filename, "--round", module], { encoding: "utf8" });
      if (child.status !== 0) throw new Error(`round failed: ${child.stderr}`);
      results.get(name)!.push(JSON.parse(child.stdout) as { main: number; others: number });
    }
  }
  console.log(`${N.toLocaleString("en")} events a round, ${ROUNDS} rounds alternating; median µs per event:`);
  for (const [name, rounds] of results) {
    console.log(`  ${name}: main thread ${median(rounds.map((r) => r.main)).toFixed(2)}, the rest of the process ${median(rounds.map((r) => r.others)).toFixed(2)} (rounds: ${rounds.map((r) => r.main.toFixed(2)).join(", ")})`);
  }
}

if (isMainThread) main();
else void workerSide();
