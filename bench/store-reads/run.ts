// Embedded store: documents at rest read from the datafile, as a campaign
// reads its audience: the count of a filter (a campaign's creation and
// `recipient-count`), the walk in id-ordered pages (the send's snapshot) and
// the lookups by ids a batch at a time (delivery's GetRecipients). Side by
// side in one run, alternating: the store as it is (a read near the last one
// reads 64 KB ahead: at-rest.ts, LineReader) and each line read alone (what
// it did before, `readAheadBytes: 0`).
//
//   npm run bench:store-reads -w @emailsvc/bench     (≈ 1 min; writes results/store-reads.json and the README table)
//
// 100,000 subscribers like the campaign benchmark's (address, name, status,
// a tag), written once to a datafile with the subscribers service's indexes;
// each round opens the store again, so every document is at rest, with a
// cache of its own at the default 8 MB. Then the count again, once the
// indexes it built are in memory, as one query and as the service counts an
// audience by tags now.

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { openEmbeddedStore } from "@emailsvc/storage";
import { countLiveHolders, SUBSCRIBER_INDEXES } from "@emailsvc/subscribers";
import { describeMachine } from "../support/machine.js";
import { writeResultsBlock } from "../support/readme.js";

const benchRoot = path.join(__dirname, "..", "..");
const SUBSCRIBERS = Number(process.env.BENCH_SUBSCRIBERS ?? 100_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CACHE_BYTES = 8 * 1024 * 1024;
const AUDIENCE = { tenant: "acc:live", status: "active", deleted: false, tag_ids: { $in: ["tag_everyone"] } };

const idOf = (n: number) => `sub_${String(n).padStart(26, "0")}`;

interface Cell {
  reads: string;
  operation: string;
  ms: number[];
  cpu_ms: number[];
}

async function timed(run: () => Promise<number>): Promise<{ ms: number; cpuMs: number; found: number }> {
  const cpu = process.cpuUsage();
  const started = performance.now();
  const found = await run();
  const used = process.cpuUsage(cpu);
  return { ms: performance.now() - started, cpuMs: (used.user + used.system) / 1000, found };
}

async function main(): Promise<void> {
  const machine = describeMachine();
  const dataDir = mkdtempSync(path.join(tmpdir(), "bench-store-reads-"));
  try {
    const writer = await openEmbeddedStore({ dataDir, cacheBytes: CACHE_BYTES });
    const subscribers = writer.collection("subscribers");
    // The subscribers service's own indexes (an audience by tags has one; a non-unique one is built by the first query that uses it).
    await subscribers.createIndexes(SUBSCRIBER_INDEXES);
    for (let i = 0; i < SUBSCRIBERS; i += 10_000) {
      await subscribers.insertMany(
        Array.from({ length: Math.min(10_000, SUBSCRIBERS - i) }, (_, k) => {
          const n = i + k;
          return {
            _id: idOf(n),
            tenant: "acc:live",
            email: `user${n}@example.com`,
            email_key: `user${n}@example.com`,
            status: "active",
            deleted: false,
            tag_ids: ["tag_everyone"],
            metadata: { name: `User ${n}` },
            created_at: 1_764_000_000_000 + n,
            updated_at: 1_764_000_000_000 + n,
          };
        }),
      );
    }
    await writer.close();

    const variants: Array<[string, number | undefined]> = [
      ["64 KB read ahead (now)", undefined],
      ["each line alone (before)", 0],
    ];
    const cells = new Map<string, Cell>();
    const record = (reads: string, operation: string, result: { ms: number; cpuMs: number }) => {
      const key = `${reads}|${operation}`;
      const cell = cells.get(key) ?? { reads, operation, ms: [], cpu_ms: [] };
      cell.ms.push(Math.round(result.ms));
      cell.cpu_ms.push(Math.round(result.cpuMs));
      cells.set(key, cell);
    };
    for (let round = 0; round < ROUNDS; round++) {
      for (const [reads, readAheadBytes] of variants) {
        const store = await openEmbeddedStore({ dataDir, cacheBytes: CACHE_BYTES, ...(readAheadBytes !== undefined ? { readAheadBytes } : {}) });
        const collection = store.collection("subscribers");
        try {
          // As the subscribers service counts an audience by tags: the holders of
          // the tags (from the index alone, once built) less the deleted ones
          // among them (reading only tombstones). The first count builds the
          // indexes it uses, reading every document once.
          const countByHolders = () => timed(() => countLiveHolders((filter) => collection.count(filter), AUDIENCE));
          const count = await countByHolders();
          if (count.found !== SUBSCRIBERS) throw new Error(`counted ${count.found}`);
          record(reads, "count the audience (the first: builds its indexes)", count);
          const again = await countByHolders();
          if (again.found !== SUBSCRIBERS) throw new Error(`counted ${again.found} again`);
          record(reads, "count it again", again);
          // As one query, as it was counted before: every candidate read to check `deleted`.
          const whole = await timed(() => collection.count(AUDIENCE));
          if (whole.found !== SUBSCRIBERS) throw new Error(`counted ${whole.found} as one query`);
          record(reads, "count it again as one query (before)", whole);
          const walk = await timed(async () => {
            let after = "";
            let found = 0;
            for (;;) {
              const page = await collection.find({ ...AUDIENCE, ...(after ? { _id: { $gt: after } } : {}) }, { sort: { _id: 1 }, limit: 1001 });
              found += Math.min(page.length, 1000);
              if (page.length <= 1000) return found;
              after = page[999]!._id;
            }
          });
          if (walk.found !== SUBSCRIBERS) throw new Error(`walked ${walk.found}`);
          record(reads, "walk in pages of 1,000", walk);
          const byIds = await timed(async () => {
            let found = 0;
            for (let i = 0; i < SUBSCRIBERS; i += 1000) {
              const ids = Array.from({ length: Math.min(1000, SUBSCRIBERS - i) }, (_, k) => idOf(i + k));
              found += (await collection.find({ tenant: "acc:live", _id: { $in: ids }, deleted: false })).length;
            }
            return found;
          });
          if (byIds.found !== SUBSCRIBERS) throw new Error(`found ${byIds.found} by id`);
          record(reads, "by ids, 1,000 a query", byIds);
        } finally {
          await store.close();
        }
        console.log(JSON.stringify([...cells.values()].filter((c) => c.reads === reads).map((c) => [c.operation, c.ms.at(-1), c.cpu_ms.at(-1)])));
      }
    }

    const list = [...cells.values()];
    const resultsDir = path.join(benchRoot, "results");
    mkdirSync(resultsDir, { recursive: true });
    writeFileSync(path.join(resultsDir, "store-reads.json"), JSON.stringify({ machine, subscribers: SUBSCRIBERS, rounds: ROUNDS, cells: list }, null, 2) + "\n");
    const header =
      `Measured ${machine.date.slice(0, 16).replace("T", " ")} UTC on ${machine.cpus} cores (${machine.cpu}), Node ${machine.node}, ` +
      `load average ${machine.loadavg_start.split(" ").slice(0, 3).join(" ")} at start; ${SUBSCRIBERS.toLocaleString("en")} subscribers at rest, ${ROUNDS} alternating rounds (each figure in round order).`;
    const rows = list.map((c) => `| ${c.operation} | ${c.reads} | ${c.ms.map((v) => v.toLocaleString("en")).join(", ")} | ${c.cpu_ms.map((v) => v.toLocaleString("en")).join(", ")} |`);
    const table = ["| operation | reads | ms | CPU ms |", "|---|---|---|---|", ...rows.sort()].join("\n");
    writeResultsBlock(path.join(benchRoot, "README.md"), "store-reads", "Embedded store: reads in runs", `${header}\n\n${table}`);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
