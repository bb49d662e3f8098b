// REST API benchmark: create and get subscribers through the gateway (and so
// through the gateway → subscribers gRPC hop), on the embedded default store,
// on MongoDB (FerretDB v1.24.2 on PostgreSQL here), and on MongoDB + Kafka.
//
//   npm run bench:api -w @emailsvc/bench      (writes bench/results/api.json)
//
// The platform runs as `npm start` does, in a child process, with rate
// limiting off (RATE_LIMIT=off); this process is the load generator
// (keep-alive HTTP/1.1, fixed concurrency, bounded time).
// Both share the machine's cores, so compare ratios within one run.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ensureKafka, ensureMongo, freePort, KAFKA_VERSION, npmStartNodeArgs } from "@emailsvc/testing";
import { describeMachine } from "../support/machine.js";
import { writeResultsBlock } from "../support/readme.js";

const repo = join(__dirname, "..", "..", ".."); // bench/dist/api -> repo root
const ADMIN = "bench-admin-token-0123456789abcdef";
const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
/** Messages per POST /api/v1/emails/batch (at most 500), and batches in flight. */
const BATCH_SIZE = Number(process.env.BENCH_BATCH_SIZE ?? 500);
const BATCH_CONCURRENCY = Number(process.env.BENCH_BATCH_CONCURRENCY ?? 4);

interface Cell {
  store: string;
  operation: "create" | "get" | "send" | "batch";
  concurrency: number;
  requests: number;
  /** Emails per request: 1, or a batch's messages. */
  messages_per_request: number;
  /** Emails accepted (202 for a send, a 202 entry of a batch) per second. */
  messages_per_s: number;
  errors: number;
  seconds: number;
  rps: number;
  p50_ms: number;
  p99_ms: number;
}

const NEWSLETTER = `<mjml><mj-body>
  <mj-section><mj-column>
    <mj-text font-size="20px">Hello {{first_name}}</mj-text>
    <mj-text>Here is what is new this week.</mj-text>
    <mj-button href="{{cta_url}}">Read more</mj-button>
  </mj-column></mj-section>
</mj-body></mjml>`;

const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

function request(base: URL, method: string, path: string, headers: Record<string, string>, body?: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: base.hostname, port: base.port, method, path, agent, headers: body ? { ...headers, "content-type": "application/json", "content-length": Buffer.byteLength(body) } : headers },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

function percentile(sorted: number[], p: number): number {
  return sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** Runs `op` from `concurrency` loops for SECONDS; returns latencies and errors. */
async function load(op: (i: number) => Promise<boolean>, concurrency = CONCURRENCY): Promise<{ latencies: number[]; errors: number; seconds: number; concurrency: number }> {
  const latencies: number[] = [];
  let errors = 0;
  let counter = 0;
  const started = process.hrtime.bigint();
  const deadline = Date.now() + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (Date.now() < deadline) {
        const t0 = process.hrtime.bigint();
        const ok = await op(counter++).catch(() => false);
        latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
        if (!ok) errors++;
      }
    }),
  );
  return { latencies: latencies.sort((a, b) => a - b), errors, seconds: Number(process.hrtime.bigint() - started) / 1e9, concurrency };
}

async function startPlatform(env: Record<string, string>): Promise<{ child: ChildProcess; base: URL; dataDir: string }> {
  const port = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), "bench-api-"));
  // As `npm start` runs it: its Node flags too.
  const child = spawn(process.execPath, [...npmStartNodeArgs(repo), join(repo, "embedded", "dist", "main.js")], {
    // RATE_LIMIT=off: one key from one address sends far more than the default
    // budgets admit (100 reads, 50 writes, 20 sends a second); this measures the
    // platform, and bench/ratelimit the limiter's own cost.
    env: { PATH: process.env.PATH ?? "", LOG_LEVEL: "warn", GATEWAY_PORT: String(port), PORTAL_PORT: "0", GATEWAY_HOST: "127.0.0.1", METRICS_PORT: "0", ADMIN_TOKEN: ADMIN, DATA_DIR: dataDir, RATE_LIMIT: "off", ...env },
    stdio: ["ignore", "ignore", "inherit"],
  });
  const base = new URL(`http://127.0.0.1:${port}`);
  const deadline = Date.now() + 30000;
  for (;;) {
    try {
      if ((await request(base, "GET", "/readyz", {})).status === 200) break;
    } catch {
      // not yet
    }
    if (Date.now() > deadline || child.exitCode !== null) throw new Error("platform did not start");
    await new Promise((r) => setTimeout(r, 100));
  }
  return { child, base, dataDir };
}

async function benchStore(store: string, env: Record<string, string>): Promise<Cell[]> {
  const { child, base, dataDir } = await startPlatform(env);
  try {
    const admin = { authorization: `Bearer ${ADMIN}` };
    const account = JSON.parse((await request(base, "POST", "/admin/v1/accounts", admin, JSON.stringify({ name: "Bench" }))).text);
    const key = JSON.parse((await request(base, "POST", `/admin/v1/accounts/${account.id}/api-keys`, admin, JSON.stringify({ mode: "live" }))).text).key as string;
    const headers = { "x-api-key": key };
    const run = `${Date.now().toString(36)}`;
    // Warm-up: JIT, connections, indexes.
    for (let i = 0; i < 200; i++) await request(base, "POST", "/api/v1/subscribers", headers, JSON.stringify({ email: `warm${i}-${run}@example.com` }));

    const ids: string[] = [];
    const create = await load(async (i) => {
      const res = await request(base, "POST", "/api/v1/subscribers", headers, JSON.stringify({ email: `user${i}-${run}@example.com`, tags: ["bench"], metadata: { n: i } }));
      if (res.status !== 201) return false;
      ids.push(JSON.parse(res.text).id);
      return true;
    });
    const get = await load(async (i) => (await request(base, "GET", `/api/v1/subscribers/${ids[(i * 7919) % ids.length]}`, headers)).status === 200);

    // Transactional send: the API's answer (202 queued) is what is timed; the
    // delivery consumer renders and hands the mail to the sandbox meanwhile.
    const template = await request(base, "POST", "/api/v1/templates", headers, JSON.stringify({ name: `Bench ${run}`, subject: "Hi {{first_name}}", mjml_content: NEWSLETTER, category: "transactional" }));
    if (template.status !== 201) throw new Error(`template create failed: ${template.text}`);
    const slug = JSON.parse(template.text).slug as string;
    const send = await load(async (i) => {
      const res = await request(base, "POST", "/api/v1/emails/send", headers, JSON.stringify({ template_slug: slug, to: `r${i}-${run}@example.com`, variables: { first_name: `N${i}`, cta_url: "https://example.com/x" }, idempotency_key: `k-${run}-${i}` }));
      return res.status === 202;
    });
    // The same sends, BATCH_SIZE to a request (POST /api/v1/emails/batch), each message with its own key:
    // a request counts when every message was accepted.
    const batch = await load(async (i) => {
      const messages = Array.from({ length: BATCH_SIZE }, (_, j) => ({
        template_slug: slug,
        to: `b${i}-${j}-${run}@example.com`,
        variables: { first_name: `N${j}`, cta_url: "https://example.com/x" },
        idempotency_key: `b-${run}-${i}-${j}`,
      }));
      const res = await request(base, "POST", "/api/v1/emails/batch", headers, JSON.stringify(messages));
      return res.status === 200 && (JSON.parse(res.text) as { accepted: number }).accepted === BATCH_SIZE;
    }, BATCH_CONCURRENCY);
    const cell = (operation: Cell["operation"], r: typeof create, perRequest = 1): Cell => ({
      store,
      operation,
      concurrency: r.concurrency,
      requests: r.latencies.length,
      messages_per_request: perRequest,
      messages_per_s: operation === "send" || operation === "batch" ? Math.round(((r.latencies.length - r.errors) * perRequest) / r.seconds) : 0,
      errors: r.errors,
      seconds: Number(r.seconds.toFixed(2)),
      rps: Math.round(r.latencies.length / r.seconds),
      p50_ms: Number(percentile(r.latencies, 50).toFixed(2)),
      p99_ms: Number(percentile(r.latencies, 99).toFixed(2)),
    });
    return [cell("create", create), cell("get", get), cell("send", send), cell("batch", batch, BATCH_SIZE)];
  } finally {
    child.kill("SIGTERM");
    await new Promise((r) => child.once("exit", r));
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** BENCH_API_STORES: which set-ups to run, comma-separated (embedded, mongo, kafka); all by default. */
const STORES = new Set((process.env.BENCH_API_STORES ?? "embedded,mongo,kafka").split(",").map((s) => s.trim()));

async function main(): Promise<void> {
  const machine = describeMachine(); // before the load: its load average is the other work on the machine
  const cells: Cell[] = [];
  if (STORES.has("embedded")) cells.push(...(await benchStore("embedded (file) + in-process bus", {})));
  if (STORES.has("mongo") || STORES.has("kafka")) {
    const mongo = await ensureMongo();
    const kafka = STORES.has("kafka") ? await ensureKafka() : undefined;
    try {
      // Labels say what the servers are (the test setup's FerretDB on PostgreSQL, a container, or the URLs given).
      if (STORES.has("mongo")) cells.push(...(await benchStore(`${mongo.description} + in-process bus`, { MONGO_URL: mongo.url })));
      if (kafka !== undefined) {
        const kafkaLabel = kafka.source === "env" ? "Kafka at KAFKA_BROKERS" : `Kafka ${KAFKA_VERSION}`;
        cells.push(...(await benchStore(`${mongo.description} + ${kafkaLabel}`, { MONGO_URL: mongo.url, KAFKA_BROKERS: kafka.brokers })));
      }
    } finally {
      await kafka?.stop();
      await mongo.stop();
    }
  }
  const resultsDir = join(repo, "bench", "results");
  mkdirSync(resultsDir, { recursive: true });
  writeFileSync(join(resultsDir, "api.json"), JSON.stringify({ machine, seconds_per_cell: SECONDS, cells }, null, 2) + "\n");
  console.log(JSON.stringify(machine));
  console.log("| store | operation | concurrency | req/s | p50 ms | p99 ms | errors |");
  console.log("|---|---|---|---|---|---|---|");
  for (const c of cells) console.log(`| ${c.store} | ${c.operation} | ${c.concurrency} | ${c.rps} | ${c.p50_ms} | ${c.p99_ms} | ${c.errors} |`);
  // Sends one by one and in batches, side by side (bench/README.md, "Batch sending").
  const sends = cells.filter((c) => c.operation === "send" || c.operation === "batch");
  const table = [
    `Measured ${machine.date} on ${machine.cpus} cores (${machine.cpu}), Node ${machine.node}, /proc/loadavg at start ${machine.loadavg_start} (\`results/api.json\`):`,
    "",
    "| store | how | in flight | requests/s | emails accepted/s | p50 ms | p99 ms | errors |",
    "|---|---|---:|---:|---:|---:|---:|---:|",
    ...sends.map(
      (c) =>
        `| ${c.store} | ${c.operation === "batch" ? `POST /emails/batch, ${c.messages_per_request} a request` : "POST /emails/send"} | ${c.concurrency} | ${c.rps} | ${c.messages_per_s} | ${c.p50_ms} | ${c.p99_ms} | ${c.errors} |`,
    ),
  ].join("\n");
  writeResultsBlock(join(repo, "bench", "README.md"), "api-batch", "Batch sending: emails accepted through the gateway", table);
  console.log(table);
  agent.destroy();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
