// MongoDB stand-in probe: does the MongoDB-compatible server the tests and
// benchmarks use behave like MongoDB where the platform relies on it?
//
//   npm run bench:mongo-probe -w @emailsvc/bench             (the test setup's server)
//   MONGO_URL=mongodb://… BENCH_LABEL='FerretDB 1.24.2/PostgreSQL 15' npm run bench:mongo-probe -w @emailsvc/bench
//
// (≈ 1–4 min; writes results/mongo-probe.json, keyed by label so that several
// servers can be recorded side by side, and the README table.)
//
// 1. Isolation of concurrent updates of one document, through the driver
//    (the server's own behaviour) and through our adapter (openMongoStore,
//    which serialises a FerretDB's updates within one process):
//    25 concurrent `$inc` (as findOneAndUpdate and as updateOne) must leave 25;
//    8 concurrent guarded claims (`{_id, owner: null}` → `$set owner`) must
//    have exactly one winner.
// 2. Pushdown: the query shapes the services issue, on collections of 10,000
//    and 100,000 subscriber-like documents with the services' indexes. A server
//    that uses its indexes answers the point lookups in about the same time at
//    both sizes; one that scans takes about ten times longer at 100,000. The
//    server's `explain` is recorded too (FerretDB reports whether it pushed the
//    filter, sort and limit down, and on PostgreSQL the plan).

import { mkdirSync, readFileSync, existsSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { MongoClient, type Collection, type Document } from "mongodb";
import { openMongoStore } from "@emailsvc/storage";
import { ensureMongo } from "@emailsvc/testing";
import { describeMachine, type Machine } from "../support/machine.js";
import { writeResultsBlock } from "../support/readme.js";

const benchRoot = path.join(__dirname, "..", ".."); // bench/dist/mongo-probe -> bench
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const SIZES = (process.env.BENCH_SIZES ?? "10000,100000").split(",").map(Number);
/** Each query shape repeats up to 20 times, or until this many seconds have passed. */
const QUERY_SECONDS = Number(process.env.BENCH_SECONDS ?? 4);

interface IsolationRound {
  inc_find_one_and_update: number;
  inc_update_one: number;
  claim_winners: number;
}

interface QueryCell {
  query: string;
  size: number;
  runs: number;
  p50_ms: number;
}

interface ExplainCell {
  query: string;
  filter_pushdown: boolean | null;
  sort_pushdown: boolean | null;
  limit_pushdown: boolean | null;
  plan: string;
}

interface Run {
  label: string;
  server: { version: string; ferretdb_version: string | null };
  machine: Machine;
  isolation: { driver: IsolationRound[]; adapter: IsolationRound[] };
  insert_ms: Record<string, number>;
  queries: QueryCell[];
  explain: ExplainCell[];
}

/** Documents with string ids, as the services store them. */
type ProbeDoc = Document & { _id: string };

const pad = (i: number): string => String(i).padStart(8, "0");
const ms = (from: bigint): number => Number(process.hrtime.bigint() - from) / 1e6;

/** 25 concurrent $inc twice over, then 8 concurrent guarded claims, on fresh documents. */
async function isolationRound(
  round: number,
  ops: {
    insert(doc: Document): Promise<void>;
    incFind(id: string): Promise<unknown>;
    incUpdate(id: string): Promise<unknown>;
    claim(id: string, owner: string): Promise<boolean>;
    read(id: string): Promise<Document | null>;
  },
): Promise<IsolationRound> {
  const counter = `counter-${round}`;
  const task = `task-${round}`;
  await ops.insert({ _id: counter, n: 0, m: 0 });
  await Promise.all(Array.from({ length: 25 }, () => ops.incFind(counter)));
  await Promise.all(Array.from({ length: 25 }, () => ops.incUpdate(counter)));
  const after = await ops.read(counter);
  await ops.insert({ _id: task, owner: null });
  const claims = await Promise.all(Array.from({ length: 8 }, (_, i) => ops.claim(task, `worker-${i}`)));
  return {
    inc_find_one_and_update: Number(after?.n),
    inc_update_one: Number(after?.m),
    claim_winners: claims.filter(Boolean).length,
  };
}

async function isolation(client: MongoClient, url: string, dbName: string): Promise<Run["isolation"]> {
  const coll = client.db(dbName).collection<ProbeDoc>("isolation_driver");
  const driver: IsolationRound[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    driver.push(
      await isolationRound(round, {
        insert: async (doc) => void (await coll.insertOne(doc as ProbeDoc)),
        incFind: (id) => coll.findOneAndUpdate({ _id: id }, { $inc: { n: 1 } }, { returnDocument: "after" }),
        incUpdate: (id) => coll.updateOne({ _id: id }, { $inc: { m: 1 } }),
        claim: async (id, owner) =>
          (await coll.findOneAndUpdate({ _id: id, owner: null }, { $set: { owner } }, { returnDocument: "after" })) !==
          null,
        read: (id) => coll.findOne({ _id: id }),
      }),
    );
  }
  const store = await openMongoStore({ url, dbName });
  try {
    const c = store.collection("isolation_adapter");
    const adapter: IsolationRound[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      adapter.push(
        await isolationRound(round, {
          insert: (doc) => c.insertOne(doc as { _id: string }),
          incFind: (id) => c.updateOne({ _id: id }, { $inc: { n: 1 } }),
          incUpdate: (id) => c.updateOne({ _id: id }, { $inc: { m: 1 } }),
          claim: async (id, owner) => (await c.updateOne({ _id: id, owner: null }, { $set: { owner } })) !== null,
          read: (id) => c.findOne({ _id: id }),
        }),
      );
    }
    return { driver, adapter };
  } finally {
    await store.close();
  }
}

/** Median time of `fn`, repeated up to 20 times or QUERY_SECONDS. */
async function timed(fn: (i: number) => Promise<unknown>): Promise<{ runs: number; p50_ms: number }> {
  const times: number[] = [];
  const deadline = Date.now() + QUERY_SECONDS * 1000;
  for (let i = 0; i < 20 && (i === 0 || Date.now() < deadline); i++) {
    const started = process.hrtime.bigint();
    await fn(i);
    times.push(ms(started));
  }
  times.sort((a, b) => a - b);
  return { runs: times.length, p50_ms: Number(times[Math.floor(times.length / 2)]!.toFixed(2)) };
}

/** The query shapes of the services (tenant-scoped lookups, keyset pages, guarded updates). */
function shapes(size: number): Array<{ query: string; command: Document; run: (c: Collection<ProbeDoc>, i: number) => Promise<unknown> }> {
  const mid = Math.floor(size / 2);
  const id = (i: number): string => `sub_${pad(mid + i)}`;
  const tenant = (i: number): string => `acc_${(mid + i) % 10}:live`;
  return [
    {
      query: "findOne {_id}",
      command: { filter: { _id: id(0) }, limit: 1 },
      run: (c, i) => c.findOne({ _id: id(i) }),
    },
    {
      query: "findOne {_id, tenant}",
      command: { filter: { _id: id(0), tenant: tenant(0) }, limit: 1 },
      run: (c, i) => c.findOne({ _id: id(i), tenant: tenant(i) }),
    },
    {
      query: "findOne {tenant, email_key} (unique index)",
      command: { filter: { tenant: tenant(0), email_key: `u${mid}@example.com` }, limit: 1 },
      run: (c, i) => c.findOne({ tenant: tenant(i), email_key: `u${mid + i}@example.com` }),
    },
    {
      query: "find {tenant, _id > x} sort {_id} limit 51 (a page)",
      command: { filter: { tenant: "acc_3:live", _id: { $gt: id(0) } }, sort: { _id: 1 }, limit: 51 },
      run: (c, i) => c.find({ tenant: "acc_3:live", _id: { $gt: id(i) } }).sort({ _id: 1 }).limit(51).toArray(),
    },
    {
      query: "findOneAndUpdate {_id, tenant} $inc",
      command: { filter: { _id: id(0), tenant: tenant(0) }, limit: 1 },
      run: (c, i) => c.findOneAndUpdate({ _id: id(i), tenant: tenant(i) }, { $inc: { n: 1 } }),
    },
  ];
}

/** The plan in one line: SQLite's or PostgreSQL's (FerretDB puts it in `queryPlanner.Plan`), or MongoDB's winning plan. */
function describePlan(explain: Document): string {
  const plan = (explain.queryPlanner as Document | undefined)?.Plan as Document | string[] | undefined;
  if (Array.isArray(plan)) {
    // FerretDB/SQLite: the rows of SQLite's EXPLAIN QUERY PLAN ("id=2 parent=0 notused=0 detail=SCAN <table>").
    return `SQLite: ${plan.map((row) => String(row).replace(/^.*detail=/, "")).join("; ")}`;
  }
  const pg = plan;
  if (pg !== undefined) {
    const node = (p: Document): string => {
      const index = p["Index Name"] ? ` on ${p["Index Name"] as string}` : "";
      const children = Array.isArray(p.Plans) ? ` ← ${(p.Plans as Document[]).map(node).join(", ")}` : "";
      return `${p["Node Type"] as string}${index}${children}`;
    };
    return `PostgreSQL: ${node(pg)}`;
  }
  const winning = (explain.queryPlanner as Document | undefined)?.winningPlan as Document | undefined;
  if (winning !== undefined) {
    const stage = (p: Document): string =>
      `${p.stage as string}${p.indexName ? ` on ${p.indexName as string}` : ""}${p.inputStage ? ` ← ${stage(p.inputStage as Document)}` : ""}`;
    return stage(winning);
  }
  return "(no plan)";
}

async function pushdown(client: MongoClient, dbName: string): Promise<Pick<Run, "insert_ms" | "queries" | "explain">> {
  const db = client.db(dbName);
  const insert_ms: Record<string, number> = {};
  const queries: QueryCell[] = [];
  let explain: ExplainCell[] = [];
  for (const size of SIZES) {
    const coll = db.collection<ProbeDoc>(`subscribers_${size}`);
    await coll.createIndexes([
      { key: { tenant: 1, email_key: 1 }, name: "tenant_email", unique: true },
      { key: { tenant: 1, status: 1 }, name: "tenant_status" },
    ]);
    const started = process.hrtime.bigint();
    for (let from = 0; from < size; from += 1000) {
      await coll.insertMany(
        Array.from({ length: Math.min(1000, size - from) }, (_, j) => {
          const i = from + j;
          return {
            _id: `sub_${pad(i)}`,
            tenant: `acc_${i % 10}:live`,
            email_key: `u${i}@example.com`,
            status: i % 7 === 0 ? "unsubscribed" : "active",
            n: 0,
          };
        }),
      );
    }
    insert_ms[String(size)] = Math.round(ms(started));
    for (const shape of shapes(size)) {
      const t = await timed((i) => shape.run(coll, i));
      queries.push({ query: shape.query, size, ...t });
      process.stderr.write(`  ${size} ${shape.query}: ${t.p50_ms} ms (${t.runs} runs)\n`);
    }
    if (explain.length === 0) {
      explain = [];
      for (const shape of shapes(size)) {
        const reply = await db.command({ explain: { find: coll.collectionName, ...shape.command }, verbosity: "queryPlanner" });
        const flag = (name: string): boolean | null => (typeof reply[name] === "boolean" ? (reply[name] as boolean) : null);
        explain.push({
          query: shape.query,
          filter_pushdown: flag("filterPushdown"),
          sort_pushdown: flag("sortPushdown"),
          limit_pushdown: flag("limitPushdown"),
          plan: describePlan(reply),
        });
      }
    }
  }
  return { insert_ms, queries, explain };
}

function table(runs: Run[]): string {
  const lines: string[] = [];
  for (const run of runs) {
    const m = run.machine;
    lines.push(
      `**${run.label}** — measured ${m.date.slice(0, 16).replace("T", " ")} UTC on ${m.cpus} cores (${m.cpu}), ` +
        `Node ${m.node}, load average ${m.loadavg_start.split(" ").slice(0, 3).join(" ")} at start; server reports ` +
        `MongoDB ${run.server.version}${run.server.ferretdb_version ? `, FerretDB ${run.server.ferretdb_version}` : ""}.`,
      "",
      `Concurrent updates of one document, ${run.isolation.driver.length} rounds (what each round left; MongoDB: 25, 25, 1):`,
      "",
      "| through | 25 × findOneAndUpdate `$inc` | 25 × updateOne `$inc` | winners of 8 guarded claims |",
      "|---|---|---|---|",
    );
    for (const [through, rounds] of [
      ["the driver (the server itself)", run.isolation.driver],
      ["our adapter (serialised per process on FerretDB)", run.isolation.adapter],
    ] as const) {
      lines.push(
        `| ${through} | ${rounds.map((r) => r.inc_find_one_and_update).join(", ")} | ` +
          `${rounds.map((r) => r.inc_update_one).join(", ")} | ${rounds.map((r) => r.claim_winners).join(", ")} |`,
      );
    }
    const sizes = [...new Set(run.queries.map((q) => q.size))];
    lines.push(
      "",
      `Query shapes, median ms (inserting ${sizes.map((s) => `${s.toLocaleString("en-US")}: ${(run.insert_ms[String(s)]! / 1000).toFixed(1)} s`).join(", ")}), and what \`explain\` says:`,
      "",
      `| query | ${sizes.map((s) => `${s.toLocaleString("en-US")} docs`).join(" | ")} | ratio | filter / sort / limit pushed down | plan |`,
      `|---|${sizes.map(() => "---:").join("|")}|---:|---|---|`,
    );
    for (const e of run.explain) {
      const cells = sizes.map((s) => run.queries.find((q) => q.query === e.query && q.size === s));
      const first = cells[0]?.p50_ms;
      const last = cells[cells.length - 1]?.p50_ms;
      const ratio = first && last && cells.length > 1 ? `${(last / first).toFixed(1)}×` : "—";
      const flag = (b: boolean | null): string => (b === null ? "?" : b ? "yes" : "no");
      lines.push(
        `| ${e.query} | ${cells.map((c) => (c ? c.p50_ms.toFixed(1) : "—")).join(" | ")} | ${ratio} | ` +
          `${flag(e.filter_pushdown)} / ${flag(e.sort_pushdown)} / ${flag(e.limit_pushdown)} | ${e.plan} |`,
      );
    }
    lines.push("");
  }
  return lines.join("\n").trimEnd();
}

async function main(): Promise<void> {
  const server = await ensureMongo();
  const client = new MongoClient(server.url, { maxPoolSize: 32 });
  const dbName = `mongo_probe_${Date.now().toString(36)}`;
  try {
    await client.connect();
    const info = await client.db("admin").command({ buildInfo: 1 });
    const ferretdb = typeof info.ferretdbVersion === "string" ? info.ferretdbVersion : null;
    const label =
      process.env.BENCH_LABEL ??
      (server.source === "env"
        ? `${ferretdb ? `FerretDB ${ferretdb}` : `MongoDB ${info.version as string}`} at MONGO_URL`
        : `${server.description} (the test setup's)`);
    const machine = describeMachine();
    process.stderr.write(`probing ${label}\n`);
    const run: Run = {
      label,
      server: { version: String(info.version), ferretdb_version: ferretdb },
      machine,
      isolation: await isolation(client, server.url, dbName),
      ...(await pushdown(client, dbName)),
    };
    await client.db(dbName).dropDatabase();

    const resultsDir = path.join(benchRoot, "results");
    mkdirSync(resultsDir, { recursive: true });
    const file = path.join(resultsDir, "mongo-probe.json");
    const previous = existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as { runs: Run[] }).runs : [];
    const runs = [...previous.filter((r) => r.label !== label), run];
    writeFileSync(file, JSON.stringify({ runs }, null, 2) + "\n");
    const block = table(runs);
    writeResultsBlock(path.join(benchRoot, "README.md"), "mongo-probe", "MongoDB stand-in probe", block);
    console.log(table([run]));
  } finally {
    await client.close();
    await server.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
