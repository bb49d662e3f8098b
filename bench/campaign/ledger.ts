// The campaigns service's ledger on the embedded store, without the rest of
// the platform: CPU seconds of its three phases for one campaign of N
// recipients, as the dispatcher and the outcomes consumer drive them: the
// audience snapshot (pages of 5,000 inserted), the hand-over (batches of
// 1,000) and delivery's outcomes (batches of 100, sent). A figure the whole
// campaign's run cannot give on this shared machine: the ledger is a tenth of
// that run's CPU, well inside its noise.
//
//   node bench/dist/campaign/ledger.js                  this build, 5 rounds of 20,000
//   LEDGER_BENCH_BASE=<another checkout> node bench/dist/campaign/ledger.js
//                                                       that checkout's build and this one, alternating
//
// Not written to the README by itself: "The ledger's writes" quotes it.

import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";

const N = Number(process.env.LEDGER_BENCH_N ?? 20_000);
const ROUNDS = Number(process.env.LEDGER_BENCH_ROUNDS ?? 5);
const THIS_CHECKOUT = path.join(__dirname, "..", "..", "..");

export interface LedgerRound {
  snapshot_cpu_s: number;
  handover_cpu_s: number;
  outcomes_cpu_s: number;
  /** The campaigns' datafiles after the run (MB). */
  datafile_mb: number;
}

/** One round against the build of `checkout` (its storage and campaigns service; `any`: another checkout's API may differ). */
export async function ledgerRound(checkout: string, n = N): Promise<LedgerRound> {
  const load = (file: string): any => require(path.join(checkout, file));
  const { openEmbeddedStore } = load("packages/storage/dist/index.js");
  const { CampaignStorage } = load("services/campaigns/dist/storage/repositories.js");
  const ledger = load("services/campaigns/dist/usecases/ledger.js");
  const { snapshotAudience } = load("services/campaigns/dist/usecases/snapshot-audience.js");
  const { recordOutcomes } = load("services/campaigns/dist/usecases/record-outcomes.js");
  const { emptyCounts } = load("services/campaigns/dist/domain/campaign.js");
  const { newId } = load("packages/ids/dist/index.js");

  const dir = mkdtempSync(path.join(tmpdir(), "ledger-bench-"));
  try {
    const store = await openEmbeddedStore({ dataDir: dir });
    const storage = new CampaignStorage(store);
    await storage.createIndexes();
    const tenant = `${newId("acc")}:test`;
    const repos = storage.forTenant(tenant);
    const audience: string[] = Array.from({ length: n }, () => newId("sub")).sort();
    const now = Date.now();
    const deps = {
      audiences: {
        count: async () => n,
        page: async (_call: unknown, _filter: unknown, after: string, limit: number) => {
          const from = after ? audience.indexOf(after) + 1 : 0;
          const ids = audience.slice(from, from + limit);
          return { ids, nextAfter: from + limit < n ? ids[ids.length - 1] : "" };
        },
      },
      templates: {},
      logger: { info: () => undefined, warn: () => undefined, child() { return this; } },
      now: () => now,
      settings: {},
    };
    const doc = {
      _id: newId("cmp"), name: "bench", template_id: newId("tpl"), tag_filter: {}, status: "sending",
      created_at: now, updated_at: now, counts: emptyCounts(), snapshot_complete: false, snapshot_after: "",
      handed_up_to: "", version: 1, outbox: [], outbox_pending: false,
    };
    await repos.campaigns.insertOne(doc);
    const cpu = () => {
      const used = process.cpuUsage();
      return (used.user + used.system) / 1e6;
    };
    let at = cpu();
    await snapshotAudience(deps, repos, { ...doc, tenant }, now + 3_600_000);
    const snapshot = cpu() - at;
    let handover = 0;
    let outcomes = 0;
    for (let i = 0; i < n; i += 1000) {
      const ids = audience.slice(i, i + 1000).map((s) => ledger.rowId(doc._id, s) as string);
      at = cpu();
      // This build: the position; builds before it: a write on every row.
      if (ledger.handOver) await ledger.handOver(repos.campaigns, doc._id, ids[ids.length - 1], ids.length, { status: "sending" });
      else await ledger.moveRows(repos, doc._id, { _id: { $in: ids } }, "pending", "queued", now);
      handover += cpu() - at;
      at = cpu();
      for (let j = 0; j < ids.length; j += 100) {
        const batch = audience.slice(i + j, i + j + 100).map((subscriberId) => ({ campaignId: doc._id, subscriberId, status: "sent", failureReason: 0 }));
        await recordOutcomes(repos, batch, now);
      }
      outcomes += cpu() - at;
    }
    const counts = (await repos.campaigns.findOne({ _id: doc._id })).counts;
    if (counts.sent !== n || counts.queued !== 0 || counts.pending !== 0) throw new Error(`the ledger does not add up: ${JSON.stringify(counts)}`);
    await store.close();
    const bytes = (readdirSync(dir, { recursive: true }) as string[])
      .map((file) => statSync(path.join(dir, file)))
      .filter((s) => s.isFile())
      .reduce((sum, s) => sum + s.size, 0);
    const round3 = (x: number) => Math.round(x * 1000) / 1000;
    return { snapshot_cpu_s: round3(snapshot), handover_cpu_s: round3(handover), outcomes_cpu_s: round3(outcomes), datafile_mb: Math.round(bytes / 1e5) / 10 };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Rounds alternating between the builds (each in a process of its own); medians per build. */
export function ledgerBench(checkouts: Array<[string, string]>, rounds = ROUNDS, n = N): Map<string, LedgerRound[]> {
  const results = new Map<string, LedgerRound[]>(checkouts.map(([name]) => [name, []]));
  for (let i = 0; i < rounds; i++) {
    for (const [name, checkout] of checkouts) {
      const child = spawnSync(process.execPath, [__filename, "--round", checkout, String(n)], { encoding: "utf8" });
      if (child.status !== 0) throw new Error(`round failed: ${child.stderr}`);
      results.get(name)!.push(JSON.parse(child.stdout) as LedgerRound);
    }
  }
  return results;
}

function main(): void {
  if (process.argv[2] === "--round") {
    void ledgerRound(process.argv[3]!, Number(process.argv[4])).then((r) => process.stdout.write(JSON.stringify(r)));
    return;
  }
  const base = process.env.LEDGER_BENCH_BASE;
  const checkouts: Array<[string, string]> = [["this build", THIS_CHECKOUT]];
  if (base) checkouts.unshift(["base", base]);
  const results = ledgerBench(checkouts);
  console.log(`${N.toLocaleString("en")} recipients a round, ${ROUNDS} rounds alternating; median CPU s:`);
  for (const [name, rounds] of results) {
    const m = (key: keyof LedgerRound) => median(rounds.map((r) => r[key]));
    const ledgerWork = rounds.map((r) => r.handover_cpu_s + r.outcomes_cpu_s);
    console.log(
      `  ${name}: snapshot ${m("snapshot_cpu_s").toFixed(3)}, hand-over ${m("handover_cpu_s").toFixed(3)}, outcomes ${m("outcomes_cpu_s").toFixed(3)}, ` +
        `hand-over + outcomes ${median(ledgerWork).toFixed(3)} (rounds: ${ledgerWork.map((x) => x.toFixed(3)).join(", ")}); datafiles ${m("datafile_mb")} MB`,
    );
  }
}

if (require.main === module) main();
