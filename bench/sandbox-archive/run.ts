// The sandbox's archive alone (services/delivery/src/storage/sandbox-messages.ts):
// what keeping a message costs on the embedded store (its body appended to a
// segment file, its row written), and what the per-tenant cap adds (past
// SANDBOX_MAX_MESSAGES_PER_TENANT the first kept go, 1,000 at a time at the
// default 10,000). Side by side in one run, alternating: the default cap and
// a cap never reached, so the difference is the cap's trims. A sandbox
// campaign of the campaign benchmark does this on delivery's thread among
// everything else; here it is alone, so a change to the trim shows through
// the noise of a whole platform on two shared cores.
//
//   npm run bench:sandbox-archive -w @emailsvc/bench     (≈ 1 min; writes results/sandbox-archive.json and the README table)
//
// 100,000 messages of one tenant of a body about the campaign benchmark's
// size, 64 kept at a time (delivery's sends in flight); each round a new
// store and directory.

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { SandboxArchive, type SandboxMessageDoc } from "@emailsvc/delivery";
import { CrossTenantCollection, openEmbeddedStore } from "@emailsvc/storage";
import { describeMachine } from "../support/machine.js";
import { writeResultsBlock } from "../support/readme.js";

const benchRoot = path.join(__dirname, "..", "..");
const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 100_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const IN_FLIGHT = 64;
const TENANT = "acc_0123456789abcdefghijklmn:test";
const HTML = `<!doctype html><html><body>${"<p>Hello, here is what happened this week at the shop, and what is coming next.</p>".repeat(30)}</body></html>`;
const TEXT = "Hello, here is what happened this week at the shop, and what is coming next.\n".repeat(30);

interface Cell {
  cap: string;
  ms: number[];
  cpu_ms: number[];
  rows_left: number[];
}

async function keepAll(maxPerTenant: number): Promise<{ ms: number; cpuMs: number; rowsLeft: number }> {
  const dir = mkdtempSync(path.join(tmpdir(), "bench-sandbox-archive-"));
  try {
    const store = await openEmbeddedStore({ dataDir: path.join(dir, "delivery") });
    const rows = store.collection<SandboxMessageDoc>("sandbox_messages");
    const archive = new SandboxArchive(new CrossTenantCollection(rows, "bench: one tenant"), { bodiesDir: path.join(dir, "sandbox"), maxPerTenant });
    // As delivery makes them at start (storage/repositories.ts).
    await rows.createIndexes(archive.indexes);
    const cpu = process.cpuUsage();
    const started = performance.now();
    let next = 0;
    const sender = async () => {
      for (let i = next++; i < MESSAGES; i = next++) {
        const emailId = `eml_${String(i).padStart(26, "0")}`;
        const kept = await archive.keep(TENANT, {
          emailId,
          from: "news@shop.example",
          to: `user${i}@example.com`,
          subject: `This week at the shop (${i})`,
          capturedAt: Date.now(),
          html: HTML,
          text: TEXT,
          headers: { "Message-ID": `<${emailId}@shop.example>`, "List-Unsubscribe": "<https://shop.example/u>" },
        });
        if (!kept) throw new Error(`${emailId} was not kept`);
      }
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, sender));
    await archive.stop(); // the last trim
    const used = process.cpuUsage(cpu);
    const ms = performance.now() - started;
    const rowsLeft = await rows.count({});
    await store.close();
    return { ms, cpuMs: (used.user + used.system) / 1000, rowsLeft };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const machine = describeMachine();
  const variants: Array<[string, number]> = [
    ["10,000 (the default)", 10_000],
    ["never reached", MESSAGES * 10],
  ];
  const cells = new Map<string, Cell>();
  for (let round = 0; round < ROUNDS; round++) {
    for (const [cap, maxPerTenant] of variants) {
      const result = await keepAll(maxPerTenant);
      const expected = Math.min(MESSAGES, maxPerTenant);
      // Within the cap, and past it no further down than a tenth below it.
      if (result.rowsLeft > expected || result.rowsLeft < expected - Math.floor(expected / 10)) throw new Error(`${result.rowsLeft} rows left under a cap of ${maxPerTenant}`);
      const cell = cells.get(cap) ?? { cap, ms: [], cpu_ms: [], rows_left: [] };
      cell.ms.push(Math.round(result.ms));
      cell.cpu_ms.push(Math.round(result.cpuMs));
      cell.rows_left.push(result.rowsLeft);
      cells.set(cap, cell);
      console.log(JSON.stringify({ cap, ms: Math.round(result.ms), cpu_ms: Math.round(result.cpuMs), rows_left: result.rowsLeft }));
    }
  }

  const list = [...cells.values()];
  const resultsDir = path.join(benchRoot, "results");
  mkdirSync(resultsDir, { recursive: true });
  writeFileSync(path.join(resultsDir, "sandbox-archive.json"), JSON.stringify({ machine, messages: MESSAGES, in_flight: IN_FLIGHT, rounds: ROUNDS, cells: list }, null, 2) + "\n");
  const header =
    `Measured ${machine.date.slice(0, 16).replace("T", " ")} UTC on ${machine.cpus} cores (${machine.cpu}), Node ${machine.node}, ` +
    `load average ${machine.loadavg_start.split(" ").slice(0, 3).join(" ")} at start; ${MESSAGES.toLocaleString("en")} messages of one tenant, ` +
    `${IN_FLIGHT} kept at a time, ${ROUNDS} alternating rounds (each figure in round order).`;
  const rows = list.map((c) => `| ${c.cap} | ${c.ms.map((v) => v.toLocaleString("en")).join(", ")} | ${c.cpu_ms.map((v) => v.toLocaleString("en")).join(", ")} | ${c.rows_left.map((v) => v.toLocaleString("en")).join(", ")} |`);
  const table = ["| cap | ms | CPU ms | rows left |", "|---|---|---|---|", ...rows].join("\n");
  writeResultsBlock(path.join(benchRoot, "README.md"), "sandbox-archive", "Sandbox: the cap's trims", `${header}\n\n${table}`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
