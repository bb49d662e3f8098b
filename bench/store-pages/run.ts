// Embedded store: walking an audience in id-ordered pages, as a campaign's
// snapshot does (AudienceService.ListAudience: active subscribers holding a
// tag, after a resume point, `limit` at a time). Side by side in one run: the
// store's walk in `_id` order from the cursor (stops when the page is full)
// against matching and sorting every candidate for each page, which the store
// does for a query sorted on more than `_id` (and did for every page before
// the walk). Also timed: writing the 100,000 documents (insertMany in batches
// of 10,000), printed, not in the table.
//
//   npm run bench:store-pages -w @emailsvc/bench     (≈ 30 s; writes results/store-pages.json and the README table)
//
// 100,000 subscribers in a memory-only embedded store, half of them holding
// the tag, one in ten unsubscribed, no index declared. The second path is
// reached with a sort on `_id` plus a second key (same order, as `_id` is unique).

import { mkdirSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { openEmbeddedStore, type SortSpec } from "@emailsvc/storage";
import { describeMachine } from "../support/machine.js";
import { writeResultsBlock } from "../support/readme.js";

const benchRoot = path.join(__dirname, "..", "..");
const SUBSCRIBERS = Number(process.env.BENCH_SUBSCRIBERS ?? 100_000);

interface Cell {
  path: string;
  limit: number;
  ids: number;
  pages: number;
  ms: number;
}

async function main(): Promise<void> {
  const machine = describeMachine();
  const store = await openEmbeddedStore({});
  const subscribers = store.collection("subscribers");
  const writing = performance.now();
  for (let i = 0; i < SUBSCRIBERS; i += 10_000) {
    await subscribers.insertMany(
      Array.from({ length: Math.min(10_000, SUBSCRIBERS - i) }, (_, k) => {
        const n = i + k;
        return { _id: `sub_${String(n).padStart(26, "0")}`, tenant: "acc:live", status: n % 10 === 0 ? "unsubscribed" : "active", deleted: false, tag_ids: [n % 2 ? "tag_a" : "tag_b"] };
      }),
    );
  }
  console.log(JSON.stringify({ insert_ms: Math.round(performance.now() - writing), subscribers: SUBSCRIBERS }));
  const cells: Cell[] = [];
  const paths: Array<[string, SortSpec]> = [
    ["walk in _id order from the cursor", { _id: 1 }],
    ["match and sort every candidate", { _id: 1, tenant: 1 }],
  ];
  for (const [name, sort] of paths) {
    for (const limit of [1000, 5000]) {
      const started = performance.now();
      let after: string | undefined;
      let ids = 0;
      let pages = 0;
      for (;;) {
        const filter = { tenant: "acc:live", status: "active", deleted: false, tag_ids: { $in: ["tag_a"] }, ...(after ? { _id: { $gt: after } } : {}) };
        const page = await subscribers.find(filter, { sort, limit });
        pages += 1;
        ids += page.length;
        if (page.length < limit) break;
        after = page[page.length - 1]!._id;
      }
      cells.push({ path: name, limit, ids, pages, ms: Math.round(performance.now() - started) });
      console.log(JSON.stringify(cells[cells.length - 1]));
    }
  }
  await store.close();

  const resultsDir = path.join(benchRoot, "results");
  mkdirSync(resultsDir, { recursive: true });
  writeFileSync(path.join(resultsDir, "store-pages.json"), JSON.stringify({ machine, subscribers: SUBSCRIBERS, cells }, null, 2) + "\n");
  const header =
    `Measured ${machine.date.slice(0, 16).replace("T", " ")} UTC on ${machine.cpus} cores (${machine.cpu}), Node ${machine.node}, ` +
    `load average ${machine.loadavg_start.split(" ").slice(0, 3).join(" ")} at start; ${SUBSCRIBERS.toLocaleString("en")} subscribers, the audience is the active half holding a tag.`;
  const rows = cells.map((c) => `| ${c.path} | ${c.limit} | ${c.pages} | ${c.ids.toLocaleString("en")} | ${c.ms.toLocaleString("en")} |`);
  const table = ["| path | page size | pages | ids | whole walk, ms |", "|---|---:|---:|---:|---:|", ...rows].join("\n");
  writeResultsBlock(path.join(benchRoot, "README.md"), "store-pages", "Embedded store: an audience in id-ordered pages", `${header}\n\n${table}`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
