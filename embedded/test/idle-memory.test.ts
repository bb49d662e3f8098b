import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { THREAD_YOUNG_GENERATION_MB } from "@emailsvc/runtime";
import { startPlatformProcess, type PlatformProcess } from "@emailsvc/testing";
import { GENEROUS_RATE_LIMIT_ENV } from "../../services/gateway/test/support/harness";
import { eventually } from "./support/platform-client";

// What `npm start` holds before any mail (bench/README.md, "Memory"): each
// worker thread loads only its own service's code, and modules of features
// that are off stay unloaded in every thread. Each thread's live heap (after
// two full collections) stays under a bound that the old way (every thread
// importing all six services, the MongoDB driver, the OTLP exporter, …:
// 60 MB on the main thread, 41 MB in each worker) is well over.
// Today: about 30 MB, 19 MB and 14 MB.

const root = join(__dirname, "..", "..");
const ADMIN = "idle-memory-admin-token-0123456789abcdef";
const kafka = process.env.KAFKA_BROKERS;
const mongo = process.env.MONGO_URL;

// Preloaded (-r) into every thread of the process: on a message of the
// channel (which the main thread posts on SIGUSR2), each thread collects its
// garbage and writes its live heap and the files it has loaded.
const PROBE = `
const { BroadcastChannel, isMainThread, workerData } = require("node:worker_threads");
const { getHeapStatistics } = require("node:v8");
const { renameSync, writeFileSync } = require("node:fs");
const { join } = require("node:path");
const channel = new BroadcastChannel("idle-memory-probe");
channel.unref();
channel.onmessage = () => {
  global.gc();
  global.gc();
  const name = isMainThread ? "main" : workerData.name;
  const heap = getHeapStatistics();
  const report = { heapUsed: heap.used_heap_size, heapLimit: heap.heap_size_limit, modules: Object.keys(require.cache) };
  const file = join(process.env.IDLE_PROBE_DIR, name + ".json");
  writeFileSync(file + ".part", JSON.stringify(report));
  renameSync(file + ".part", file);
};
if (isMainThread) process.on("SIGUSR2", () => { const out = new BroadcastChannel("idle-memory-probe"); out.postMessage("report"); out.close(); });
`;

interface ThreadReport {
  heapUsed: number;
  heapLimit: number;
  modules: string[];
}

const MB = 1024 * 1024;
/**
 * Packages no thread of the platform at rest loads: their feature is off, or
 * not used yet (MJML until a template is compiled; the MongoDB driver without MONGO_URL).
 */
const UNUSED_BY_DEFAULT = ["mongodb", "mjml", "mjml-core", "juice", "cheerio", "undici", "@opentelemetry/exporter-trace-otlp-http", "@aws-sdk/client-sesv2", "smtp-server", "@simplewebauthn/server"];
const UNUSED_WITH_SERVERS = UNUSED_BY_DEFAULT.filter((name) => name !== "mongodb");

/** The packages under node_modules and the services' folders a thread loaded. */
function loaded(report: ThreadReport): { packages: Set<string>; services: Set<string> } {
  const packages = new Set<string>();
  const services = new Set<string>();
  for (const file of report.modules) {
    const inModules = /.*\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(file);
    if (inModules) packages.add(inModules[1]!);
    const service = /\/services\/([a-z]+)\/dist\//.exec(file);
    if (service) services.add(service[1]!);
  }
  return { packages, services };
}

describe.each([
  { setup: "embedded store, in-process bus", servers: false },
  { setup: "MongoDB-compatible store, Kafka", servers: true },
])("npm start at rest ($setup)", ({ servers }) => {
  const dir = mkdtempSync(join(tmpdir(), "idle-memory-"));
  const probeDir = join(dir, "probe");
  let proc: PlatformProcess | undefined;

  beforeAll(async () => {
    if (servers && (!kafka || !mongo)) throw new Error("KAFKA_BROKERS and MONGO_URL are not set: run the tests through `npm test`, whose setup starts Kafka and FerretDB");
    writeFileSync(join(dir, "probe.js"), PROBE);
    mkdirSync(probeDir);
    proc = await startPlatformProcess(
      root,
      {
        DATA_DIR: join(dir, "data"),
        ADMIN_TOKEN: ADMIN,
        IDLE_PROBE_DIR: probeDir,
        ...(servers ? { MONGO_URL: mongo!, KAFKA_BROKERS: kafka!, KAFKA_NAMESPACE: `idle${Date.now().toString(36)}` } : {}),
        ...GENEROUS_RATE_LIMIT_ENV,
      },
      { nodeArgs: ["--expose-gc", "-r", join(dir, "probe.js")] },
    );
  }, 120_000);

  afterAll(async () => {
    await proc?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("loads in each thread only its services and the features in use, and holds a bounded heap", async () => {
    proc!.child.kill("SIGUSR2");
    const threads = ["main", "delivery", "campaigns"];
    const written = await eventually(
      async () => threads.filter((name) => existsSync(join(probeDir, `${name}.json`))),
      (names) => names.length === threads.length,
      600,
    );
    expect(written).toEqual(threads);
    const reports = Object.fromEntries(threads.map((name) => [name, JSON.parse(readFileSync(join(probeDir, `${name}.json`), "utf8")) as ThreadReport]));

    const main = loaded(reports.main!);
    const delivery = loaded(reports.delivery!);
    const campaigns = loaded(reports.campaigns!);
    // A worker thread runs one service and loads no other's code.
    expect([...delivery.services]).toEqual(["delivery"]);
    expect([...campaigns.services]).toEqual(["campaigns"]);
    for (const [thread, { packages }] of Object.entries({ main, delivery, campaigns })) {
      const unused = (servers ? UNUSED_WITH_SERVERS : UNUSED_BY_DEFAULT).filter((name) => packages.has(name));
      expect({ thread, unused }).toEqual({ thread, unused: [] });
    }

    // Delivery's thread has the young generation THREAD_YOUNG_GENERATION_MB gives it, campaigns' V8's
    // default (48 MB: 16 MB semi-spaces); the old generation's limit is the same in both.
    expect((reports.delivery!.heapLimit - reports.campaigns!.heapLimit) / MB).toBe(THREAD_YOUNG_GENERATION_MB.delivery! - 48);

    // Live heap after a full collection.
    const bounds: Record<string, number> = { main: 45 * MB, delivery: 30 * MB, campaigns: 30 * MB };
    for (const name of threads) {
      expect({ thread: name, heapUsedMb: Math.round(reports[name]!.heapUsed / MB), within: reports[name]!.heapUsed <= bounds[name]! }).toEqual({
        thread: name,
        heapUsedMb: expect.any(Number),
        within: true,
      });
    }
  });
});
