// gRPC hop benchmark: unary GetSubscriber calls over HTTP/2 cleartext between
// connect-node (out of the box, and with the runtime kit's fixes) and grpc-js,
// at several concurrencies, bounded in time. Each pair's server runs in its own
// child process (a core each, as two services would have); every client runs
// in this process. See bench/README.md, "gRPC hop".
//
//   npm run bench:grpc-hop -w @emailsvc/bench            full run: results/grpc-hop.json + README table
//   npm run bench:grpc-hop -w @emailsvc/bench -- --set=experiments --rounds=1
//   options: --seconds=2 --slices=4 --rounds=2 --concurrency=1,8,32 --only=a,b,c --set=main|experiments
//
// The machine is shared and noisy, so cells are not measured one after the
// other: each cell's time is cut into slices, and the slices of all pairs are
// interleaved (a b c d… a b c d…), so that a burst of noise hits every pair
// alike and the ratios between pairs stay meaningful.
import { execSync, fork, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { performance } from "node:perf_hooks";
import { requestBytes, responseBytes, subscriberRequest } from "./fixtures.js";
import { createCaller, setUpTelemetry, type Caller, type ServerSpec } from "./pairs.js";
import type { ChildUsage } from "./server-child.js";
import { experiments, mainScenarios, type Scenario } from "./scenarios.js";
import { writeResultsBlock } from "../support/readme.js";

interface Options {
  seconds: number;
  slices: number;
  warmupSeconds: number;
  rounds: number;
  concurrency: number[];
  only: string[] | undefined;
  set: "main" | "experiments";
  maxCallsPerSlice: number;
}

interface Cell {
  scenario: string;
  concurrency: number;
  calls: number;
  errors: number;
  seconds: number;
  rps: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  maxMs: number;
  /** CPU time used per wall-clock second, in percent of one core. */
  clientCpuPct: number;
  serverCpuPct: number;
  /** CPU time per call (µs) of each side: less sensitive to a noisy machine than req/s. */
  clientCpuUsPerCall: number;
  serverCpuUsPerCall: number;
  /** Ratios to the grpc-js pair ("c") of the same round and concurrency. */
  rpsVsGrpcJs?: number;
  p99VsGrpcJs?: number;
}

const benchRoot = path.resolve(__dirname, "../..");

function parseArgs(argv: string[]): Options {
  const get = (name: string): string | undefined =>
    argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  return {
    seconds: Number(get("seconds") ?? 2),
    slices: Number(get("slices") ?? 4),
    warmupSeconds: Number(get("warmup") ?? 0.5),
    rounds: Number(get("rounds") ?? 2),
    concurrency: (get("concurrency") ?? "1,8,32").split(",").map(Number),
    only: get("only")?.split(","),
    set: get("set") === "experiments" ? "experiments" : "main",
    maxCallsPerSlice: Number(get("max-calls") ?? 50_000),
  };
}

class ServerProcess {
  private constructor(
    private readonly child: ChildProcess,
    readonly port: number,
  ) {}

  static start(spec: ServerSpec, extraExecArgv: string[] = []): Promise<ServerProcess> {
    const execArgv = [...(process.env.BENCH_SERVER_NODE_OPTIONS ?? "").split(" ").filter(Boolean), ...extraExecArgv];
    const child = fork(path.join(__dirname, "server-child.js"), [JSON.stringify(spec)], { execArgv, stdio: "inherit" });
    return new Promise((resolve, reject) => {
      child.once("error", reject);
      child.once("exit", (code) => reject(new Error(`server child exited with ${code}`)));
      child.once("message", (m: { port?: number }) => {
        if (typeof m.port === "number") resolve(new ServerProcess(child, m.port));
      });
    });
  }

  usage(): Promise<ChildUsage> {
    return new Promise((resolve) => {
      const onMessage = (m: { usage?: ChildUsage }): void => {
        if (m.usage) {
          this.child.off("message", onMessage);
          resolve(m.usage);
        }
      };
      this.child.on("message", onMessage);
      this.child.send("usage");
    });
  }

  stop(): Promise<void> {
    return new Promise((resolve) => {
      this.child.removeAllListeners("exit");
      this.child.once("exit", () => resolve());
      this.child.send("stop");
    });
  }
}

interface Slice {
  latencies: Float64Array;
  errors: number;
  elapsed: number;
}

/** Closed loop: `concurrency` workers, each issuing its next call when the previous one is answered. */
async function drive(caller: Caller, concurrency: number, seconds: number, maxCalls: number): Promise<Slice> {
  const latencies = new Float64Array(maxCalls);
  let issued = 0;
  let done = 0;
  let errors = 0;
  let firstError: unknown;
  const start = performance.now();
  const deadline = start + seconds * 1000;
  async function worker(): Promise<void> {
    while (issued < maxCalls && performance.now() < deadline) {
      const n = issued++;
      const expected = subscriberRequest(n).id;
      const t0 = performance.now();
      try {
        const id = await caller.call(n);
        if (id !== expected) throw new Error(`wrong subscriber ${id}, expected ${expected}`);
      } catch (err) {
        errors++;
        firstError ??= err;
      }
      latencies[done++] = performance.now() - t0;
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker));
  const elapsed = (performance.now() - start) / 1000;
  if (firstError !== undefined) console.error("  first error:", firstError);
  return { latencies: latencies.subarray(0, done), errors, elapsed };
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i] ?? NaN;
}

function round(n: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

interface Pair {
  scenario: Scenario;
  server: ServerProcess;
  caller: Caller;
}

async function runRound(scenarios: Scenario[], options: Options): Promise<Cell[]> {
  const pairs: Pair[] = [];
  try {
    for (const scenario of scenarios) {
      const server = await ServerProcess.start(scenario.server, scenario.serverExecArgv);
      pairs.push({ scenario, server, caller: createCaller(scenario.client, server.port) });
    }
    for (const pair of pairs) await drive(pair.caller, 32, options.warmupSeconds, options.maxCallsPerSlice);

    const cells: Cell[] = [];
    for (const concurrency of options.concurrency) {
      const acc = pairs.map(() => ({ slices: [] as Slice[], clientCpu: 0, serverCpu: 0 }));
      for (let s = 0; s < options.slices; s++) {
        for (const [i, pair] of pairs.entries()) {
          const serverBefore = await pair.server.usage();
          const clientBefore = process.cpuUsage();
          const slice = await drive(pair.caller, concurrency, options.seconds / options.slices, options.maxCallsPerSlice);
          const client = process.cpuUsage(clientBefore);
          const serverAfter = await pair.server.usage();
          const a = acc[i]!;
          a.slices.push(slice);
          a.clientCpu += client.user + client.system;
          a.serverCpu += serverAfter.cpuMicros - serverBefore.cpuMicros;
        }
      }
      for (const [i, pair] of pairs.entries()) {
        const a = acc[i]!;
        const calls = a.slices.reduce((n, s) => n + s.latencies.length, 0);
        const elapsed = a.slices.reduce((n, s) => n + s.elapsed, 0);
        const sorted = new Float64Array(calls);
        let offset = 0;
        for (const s of a.slices) {
          sorted.set(s.latencies, offset);
          offset += s.latencies.length;
        }
        sorted.sort();
        const cell: Cell = {
          scenario: pair.scenario.id,
          concurrency,
          calls,
          errors: a.slices.reduce((n, s) => n + s.errors, 0),
          seconds: round(elapsed, 3),
          rps: Math.round(calls / elapsed),
          p50Ms: round(percentile(sorted, 50), 2),
          p90Ms: round(percentile(sorted, 90), 2),
          p99Ms: round(percentile(sorted, 99), 2),
          maxMs: round(percentile(sorted, 100), 2),
          clientCpuPct: Math.round((a.clientCpu / 1e6 / elapsed) * 100),
          serverCpuPct: Math.round((a.serverCpu / 1e6 / elapsed) * 100),
          clientCpuUsPerCall: Math.round(a.clientCpu / calls),
          serverCpuUsPerCall: Math.round(a.serverCpu / calls),
        };
        cells.push(cell);
      }
      addRatios(cells);
      for (const cell of cells.filter((c) => c.concurrency === concurrency)) printCell(cell);
    }
    return cells;
  } finally {
    for (const pair of pairs) {
      pair.caller.close();
      await pair.server.stop();
    }
  }
}

function printCell(cell: Cell): void {
  console.log(
    `  ${cell.scenario.padEnd(8)} c=${String(cell.concurrency).padStart(2)} ${String(cell.rps).padStart(6)} req/s` +
      ` p50 ${cell.p50Ms.toFixed(2).padStart(6)} ms p99 ${cell.p99Ms.toFixed(2).padStart(6)} ms` +
      `  ×grpc-js ${cell.rpsVsGrpcJs?.toFixed(2) ?? " –  "}` +
      `  cpu ${cell.clientCpuPct}%/${cell.serverCpuPct}%` +
      `  µs/call ${cell.clientCpuUsPerCall}/${cell.serverCpuUsPerCall}` +
      (cell.errors ? `  errors ${cell.errors}` : ""),
  );
}

function addRatios(cells: Cell[]): void {
  for (const cell of cells) {
    const base = cells.find((c) => c.scenario === "c" && c.concurrency === cell.concurrency);
    if (!base) continue;
    cell.rpsVsGrpcJs = round(cell.rps / base.rps, 2);
    cell.p99VsGrpcJs = round(cell.p99Ms / base.p99Ms, 2);
  }
}

function machine() {
  const cpuinfo = fs.readFileSync("/proc/cpuinfo", "utf8");
  const model = /^model name\s*:\s*(.*)$/m.exec(cpuinfo)?.[1] ?? os.cpus()[0]?.model ?? "unknown";
  let nproc = os.availableParallelism();
  try {
    nproc = Number(execSync("nproc", { encoding: "utf8" }).trim());
  } catch {
    // keep os.availableParallelism()
  }
  return {
    nproc,
    cpuModel: model,
    node: process.version,
    platform: `${os.type()} ${os.release()}`,
    date: new Date().toISOString(),
    loadAverageAtStart: os.loadavg().map((l) => round(l, 2)),
  };
}

function versions(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of ["@connectrpc/connect", "@connectrpc/connect-node", "@grpc/grpc-js", "@bufbuild/protobuf"]) {
    // Some of these packages do not export ./package.json: walk up from their entry point.
    let dir = path.dirname(require.resolve(name));
    while (!(dir.endsWith(name) && fs.existsSync(path.join(dir, "package.json")))) {
      const parent = path.dirname(dir);
      if (parent === dir) break;
      dir = parent;
    }
    const pkg = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")) as { version: string };
    out[name] = pkg.version;
  }
  return out;
}

function markdownTable(cells: Cell[], scenarios: Scenario[]): string {
  const lines = [
    "| pair | in flight | req/s | p50 ms | p99 ms | req/s ÷ grpc-js | p99 ÷ grpc-js | CPU µs/call client / server |",
    "|---|---:|---:|---:|---:|---:|---:|---:|",
  ];
  const sorted = [...cells].sort(
    (x, y) =>
      scenarios.findIndex((s) => s.id === x.scenario) - scenarios.findIndex((s) => s.id === y.scenario) ||
      x.concurrency - y.concurrency,
  );
  for (const cell of sorted) {
    const s = scenarios.find((x) => x.id === cell.scenario);
    lines.push(
      `| ${cell.scenario}: ${s?.label ?? ""} | ${cell.concurrency} | ${cell.rps} | ${cell.p50Ms.toFixed(2)} | ${cell.p99Ms.toFixed(2)} | ` +
        `${cell.rpsVsGrpcJs?.toFixed(2) ?? "–"} | ${cell.p99VsGrpcJs?.toFixed(2) ?? "–"} | ${cell.clientCpuUsPerCall} / ${cell.serverCpuUsPerCall} |`,
    );
  }
  return lines.join("\n");
}

/** Before (a) / after (b) / baseline (c) per concurrency, one column group per round. */
function summaryTable(rounds: Cell[][], concurrency: number[]): string {
  const head = ["in flight"];
  const rule = ["---:"];
  rounds.forEach((_, i) => {
    const r = rounds.length > 1 ? ` (round ${i + 1})` : "";
    head.push(`a req/s${r}`, `b req/s${r}`, `c req/s${r}`, `p99 ms a / b / c${r}`);
    rule.push("---:", "---:", "---:", "---:");
  });
  const lines = [`| ${head.join(" | ")} |`, `|${rule.join("|")}|`];
  for (const n of concurrency) {
    const row = [String(n)];
    for (const cells of rounds) {
      const get = (id: string): Cell | undefined => cells.find((c) => c.scenario === id && c.concurrency === n);
      const [a, b, c] = [get("a"), get("b"), get("c")];
      const ratio = (x: Cell | undefined): string => (x?.rpsVsGrpcJs !== undefined ? ` (${x.rpsVsGrpcJs.toFixed(2)}×)` : "");
      row.push(
        `${a?.rps ?? "–"}${ratio(a)}`,
        `${b?.rps ?? "–"}${ratio(b)}`,
        `${c?.rps ?? "–"}`,
        `${a?.p99Ms.toFixed(1) ?? "–"} / ${b?.p99Ms.toFixed(1) ?? "–"} / ${c?.p99Ms.toFixed(1) ?? "–"}`,
      );
    }
    lines.push(`| ${row.join(" | ")} |`);
  }
  return lines.join("\n");
}


async function main(): Promise<void> {
  const options = parseArgs(process.argv.slice(2));
  setUpTelemetry();
  const all = options.set === "experiments" ? experiments : mainScenarios;
  const scenarios = all.filter((s) => !options.only || options.only.includes(s.id));
  const m = machine();
  console.log(
    `gRPC hop: ${m.nproc} cores, ${m.cpuModel}, Node ${m.node}, load ${m.loadAverageAtStart.join(" ")}; ` +
      `request ${requestBytes} B, response ${responseBytes} B; ${options.seconds} s per cell in ${options.slices} interleaved slices`,
  );
  const rounds: Cell[][] = [];
  for (let r = 1; r <= options.rounds; r++) {
    console.log(`round ${r}/${options.rounds}`);
    rounds.push(await runRound(scenarios, options));
  }
  const partial = options.set !== "main" || options.only !== undefined || options.concurrency.join() !== "1,8,32";
  const results = {
    benchmark: "grpc-hop",
    machine: m,
    versions: versions(),
    settings: {
      secondsPerCell: options.seconds,
      slicesPerCell: options.slices,
      warmupSecondsPerPair: options.warmupSeconds,
      concurrency: options.concurrency,
      server: "child process per pair; clients in the benchmark process",
      requestBytes,
      responseBytes,
    },
    scenarios,
    rounds,
  };
  const resultsDir = path.join(benchRoot, "results");
  fs.mkdirSync(resultsDir, { recursive: true });
  const out = path.join(resultsDir, partial ? `grpc-hop-${options.set}.tmp.json` : "grpc-hop.json");
  fs.writeFileSync(out, JSON.stringify(results, null, 2) + "\n");
  console.log(`wrote ${path.relative(process.cwd(), out)}`);
  if (!partial) {
    const header =
      `Measured ${m.date.slice(0, 16).replace("T", " ")} UTC on ${m.nproc} cores (${m.cpuModel}), Node ${m.node}, ` +
      `load average ${m.loadAverageAtStart.join(" ")} at start; ` +
      Object.entries(results.versions)
        .map(([k, v]) => `${k} ${v}`)
        .join(", ") +
      `. ${options.seconds} s per cell (${options.slices} slices interleaved across pairs), ${options.warmupSeconds} s warm-up per pair; ` +
      `request ${requestBytes} B, response ${responseBytes} B.`;
    const summary =
      `a = connect-node out of the box, b = runtime kit, c = grpc-js pair; (×) = req/s ÷ grpc-js of the same round.\n\n` +
      summaryTable(rounds, options.concurrency);
    const tables = rounds
      .map((cells, i) => `<details><summary>Round ${i + 1}, every pair</summary>\n\n${markdownTable(cells, scenarios)}\n\n</details>`)
      .join("\n\n");
    writeResultsBlock(path.join(benchRoot, "README.md"), "grpc-hop", "gRPC hop", `${header}\n\n${summary}\n\n${tables}`);
    console.log("updated README.md");
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
