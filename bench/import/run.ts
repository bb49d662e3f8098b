// Import benchmark: one CSV file of N rows (default 100,000; a fixed seed,
// with rows that are not addresses, addresses repeated in the file and, for
// ours, addresses erased beforehand) imported through each system's own bulk
// import, in one run:
//   1. ours, `npm start`'s default (embedded store, in-process bus, one process);
//   2. ours, one process per service on MongoDB (MONGO_URL, or the testing
//      kit's FerretDB) with Kafka;
//   3. listmonk's CSV import of the same file (bench/support/listmonk.ts).
//
//   npm run bench:import -w @emailsvc/bench     (writes bench/results/import.json)
//
// IMPORT_BENCH_N sets the rows; IMPORT_BENCH_EMBEDDED, IMPORT_BENCH_CRASH (the
// embedded run again, killed with kill -9 at half the rows and started again
// on the same data), IMPORT_BENCH_SPLIT, IMPORT_BENCH_LISTMONK `=off` skip a run; LISTMONK_SRC (a clone of
// listmonk's repository, at LISTMONK_REF or its HEAD) runs that release's
// import too. Timed from the upload's first byte
// until the job (listmonk: its import) is finished; each run's counts are
// checked against what the file must give, by the system's own database.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ensureKafka, ensureMongo, KAFKA_VERSION } from "@emailsvc/testing";
import { listmonkFromSource, type ListmonkBuild } from "../support/listmonk.js";
import { describeMachine } from "../support/machine.js";
import { describeMongo, dropDatabases, perServiceMongoEnv } from "../support/mongo.js";
import { api, oneProcess, processPerService, REPO, SERVICES, type Running, type ServiceName } from "../support/platform.js";
import { writeResultsBlock } from "../support/readme.js";
import { generateImportFile, type ImportFile } from "./generate.js";
import { LISTMONK_IMPORT_PARAMS, runListmonkImport } from "./listmonk.js";
import { checkOurs, startImport, waitForImport } from "./ours.js";

const N = Number(process.env.IMPORT_BENCH_N ?? 100_000);
const on = (name: string) => process.env[name] !== "off";

export interface ImportRow {
  run: string;
  rows: number;
  seconds: number;
  rows_per_s: number;
  /**
   * As the system reports them. listmonk's: created = subscribers new in its
   * tables, skipped = rows it committed beyond those (repeats, blocklisted),
   * failed = rows its log says it skipped.
   */
  created: number;
  skipped: number;
  failed: number;
  /** Good addresses without exactly one subscriber, and subscribers the file does not explain: both must be 0. */
  missing: number;
  extra: number;
  /** Subscribers whose values (ours: metadata and tags; listmonk: name and attributes) are not their address's first row's: must be 0. */
  wrong: number;
  peak_rss_mb: number;
  /** The same peak as the import started (after the setup): what the import added is the difference (ours; the embedded store keeps every document in memory, so part of it is the subscribers themselves). */
  peak_rss_before_mb?: number;
  /** CPU seconds of the system's own processes during the import. */
  cpu_s: number;
  /** listmonk only: its PostgreSQL's CPU seconds meanwhile (ours on MongoDB: the shared server's are not counted). */
  db_cpu_s?: number;
  /** Each process's peak memory and CPU seconds during the import (ours: the platform, or each service). */
  processes: Record<string, { peak_rss_mb: number; cpu_s: number }>;
  /** /proc/loadavg as this run's import started (the runs are minutes apart on a shared machine). */
  loadavg_start: string;
  /** Ours: the rows read when the platform was killed (kill -9) and started again on the same data; the time includes the restart. */
  killed_at_rows?: number;
  /** Ours: the job's report (GET …/errors) names every row that is not an address once, and no row twice. */
  report_ok?: boolean;
}

function round(x: number): number {
  return Math.round(x * 100) / 100;
}

/**
 * One import of `file` through our public API on a fresh platform (`launch`):
 * an account and a live key, the file's erased addresses created and erased
 * (setup), then the import timed, then the store checked.
 */
async function runOurs(
  name: string,
  file: ImportFile,
  launch: () => Promise<Running>,
  store: (dbName: string) => { mongoUrl?: string; dataDir?: string; dbName: string },
  options: { killMidway?: boolean } = {},
): Promise<ImportRow> {
  console.log(`${name}: ${file.rows} rows`);
  let platform = await launch();
  let stopped = false;
  try {
    const account = await api(platform.url, "", "POST", "/admin/v1/accounts", { name: "Import bench" }, true);
    const issued = await api(platform.url, "", "POST", `/admin/v1/accounts/${account.body.id}/api-keys`, { mode: "live" }, true);
    if (account.status !== 201 || issued.status !== 201) throw new Error(`setup: ${account.status} ${issued.status}`);
    const key = issued.body.key as string;
    for (const address of file.erased) {
      const created = await api(platform.url, key, "POST", "/api/v1/subscribers", { email: address });
      const erased = created.status === 201 ? await api(platform.url, key, "DELETE", `/api/v1/subscribers/${created.body.id}`) : created;
      if (erased.status >= 300) throw new Error(`erasing a subscriber beforehand: ${erased.status} ${JSON.stringify(erased.body)}`);
    }
    const cpu0 = platform.cpuSeconds();
    const peakBefore = platform.peakRssMb();
    const cpuBefore = platform.perProcess();
    const loadavg = readFileSync("/proc/loadavg", "utf8").trim();
    const t0 = performance.now();
    const id = await startImport(platform.url, key, file);
    // The crash run: kill -9 once about half the rows are read, then the same data started again.
    let killedAt: number | undefined;
    let cpuBeforeKill = 0;
    let peakBeforeKill = 0;
    if (options.killMidway) {
      killedAt = await rowsReadOnceHalfway(platform.url, key, id, file.rows);
      cpuBeforeKill = platform.cpuSeconds() - cpu0;
      peakBeforeKill = platform.peakRssMb();
      await platform.kill();
      console.log(`  killed (kill -9) at ${killedAt} rows read; starting again`);
      platform = await launch();
    }
    const job = await waitForImport(platform.url, key, id, console.log, t0);
    const seconds = (performance.now() - t0) / 1000;
    // After a kill: the first process's share, then the second's whole (its start included).
    const cpu = options.killMidway ? cpuBeforeKill + platform.cpuSeconds() : platform.cpuSeconds() - cpu0;
    const peak = Math.max(peakBeforeKill, platform.peakRssMb());
    const reportOk = await reportNamesEachBadRowOnce(platform.url, key, id, file);
    // After a kill: the processes started again, whole (their start included).
    const processes = Object.fromEntries(
      Object.entries(platform.perProcess()).map(([name, p]) => [name, { peak_rss_mb: p.peak_rss_mb, cpu_s: round(p.cpu_s - (options.killMidway ? 0 : (cpuBefore[name]?.cpu_s ?? 0))) }]),
    );
    if (job.state !== "completed") throw new Error(`import ended ${job.state}: ${JSON.stringify(job)}`);
    await platform.stop();
    stopped = true;
    const { missing, extra, wrong } = await checkOurs(store("subscribers"), `${account.body.id}:live`, file);
    return {
      run: name,
      rows: file.rows,
      seconds: round(seconds),
      rows_per_s: Math.round(file.rows / seconds),
      created: job.created,
      skipped: job.skipped,
      failed: job.failed,
      missing,
      extra,
      wrong,
      peak_rss_mb: peak,
      peak_rss_before_mb: peakBefore,
      cpu_s: round(cpu),
      processes,
      loadavg_start: loadavg,
      ...(killedAt !== undefined ? { killed_at_rows: killedAt } : {}),
      report_ok: reportOk,
    };
  } finally {
    if (!stopped) await platform.stop();
  }
}

/** Polls the job until it has read half the file's rows; its rows read then. A job done by then fails the run (nothing was interrupted). */
async function rowsReadOnceHalfway(base: string, key: string, id: string, rows: number): Promise<number> {
  for (;;) {
    const job = (await api(base, key, "GET", `/api/v1/subscribers/imports/${id}`)).body as { state: string; rows_read: number };
    if (job.state !== "uploading" && job.state !== "queued" && job.state !== "running") throw new Error(`the import ended (${job.state}) before it could be killed midway`);
    if (job.rows_read >= rows / 2) return job.rows_read;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * The job's report (CSV `row,field,code,detail`): every row that is not an
 * address named exactly once, with `invalid_email`, and no row named twice
 * (repeats and erased addresses are reported too, as skipped).
 */
async function reportNamesEachBadRowOnce(base: string, key: string, id: string, file: ImportFile): Promise<boolean> {
  const res = await fetch(`${base}/api/v1/subscribers/imports/${id}/errors`, { headers: { "x-api-key": key } });
  if (res.status !== 200) throw new Error(`GET /api/v1/subscribers/imports/${id}/errors: ${res.status}`);
  const lines = (await res.text()).trimEnd().split(/\r?\n/).slice(1);
  const rows = lines.map((line) => Number(line.split(",")[0]));
  const invalid = new Set(lines.filter((line) => line.split(",")[2] === "invalid_email").map((line) => Number(line.split(",")[0])));
  const once = new Set(rows).size === rows.length;
  const everyBad = file.badRows.every((row) => invalid.has(row)) && invalid.size === file.badRows.length;
  const expected = file.badRows.length + file.duplicates + file.erased.length;
  if (!once || !everyBad || rows.length !== expected) console.warn(`report of ${id}: ${rows.length} rows (expected ${expected}), each once: ${once}, every bad row as invalid_email: ${everyBad}`);
  return once && everyBad && rows.length === expected;
}

async function main(): Promise<void> {
  const machine = describeMachine();
  const work = mkdtempSync(join(tmpdir(), "bench-import-"));
  const rows: ImportRow[] = [];
  /** Runs that failed: the others still run; nothing is recorded then. */
  const failures: string[] = [];
  const attempt = async (name: string, body: () => Promise<void>) => {
    try {
      await body();
    } catch (err) {
      console.error(`${name} failed:`, err);
      failures.push(`${name}: ${err instanceof Error ? err.message : String(err)}`);
    }
  };
  try {
    const file = await generateImportFile(join(work, "subscribers.csv"), N);
    const expected = {
      created: file.good.length - file.erased.length,
      skipped: file.duplicates + file.erased.length,
      failed: file.badRows.length,
    };
    console.log(`import of ${N} rows (${(file.bytes / 1e6).toFixed(1)} MB): expected ${JSON.stringify(expected)}`);
    // The rate limits lifted: the setup's calls, and the polls, are not what is measured.
    const unlimited = { RATE_LIMIT: "off" };

    if (on("IMPORT_BENCH_EMBEDDED")) await attempt("embedded", async () => {
      const dataDir = mkdtempSync(join(tmpdir(), "bench-import-embedded-"));
      try {
        rows.push(await runOurs("emailsvc: embedded store, in-process bus (npm start)", file, () => oneProcess(dataDir, unlimited), (dbName) => ({ dataDir, dbName })));
        console.log(rows.at(-1));
      } finally {
        rmSync(dataDir, { recursive: true, force: true });
      }
    });

    if (on("IMPORT_BENCH_CRASH")) await attempt("embedded, killed midway", async () => {
      const dataDir = mkdtempSync(join(tmpdir(), "bench-import-crash-"));
      try {
        rows.push(
          await runOurs("emailsvc: embedded, kill -9 at half the rows and started again", file, () => oneProcess(dataDir, unlimited), (dbName) => ({ dataDir, dbName }), { killMidway: true }),
        );
        console.log(rows.at(-1));
      } finally {
        rmSync(dataDir, { recursive: true, force: true });
      }
    });

    if (on("IMPORT_BENCH_SPLIT")) await attempt("process per service", async () => {
      const mongo = await ensureMongo();
      try {
        const kafka = await ensureKafka();
        const dataDir = mkdtempSync(join(tmpdir(), "bench-import-split-"));
        const prefix = `bimp${Date.now().toString(36)}`;
        const dbName = (service: string) => `${prefix}_${service}`;
        const env = { ...unlimited, ...perServiceMongoEnv(mongo.url, kafka.brokers, prefix) };
        try {
          const server = await describeMongo(mongo.url, mongo.description);
          const launch = () => processPerService(dataDir, env, { own: (service: ServiceName) => ({ MONGO_DB: dbName(service) }) });
          rows.push(await runOurs(`emailsvc: process per service, ${server}, Kafka ${KAFKA_VERSION}`, file, launch, (service) => ({ mongoUrl: mongo.url, dbName: dbName(service) })));
          console.log(rows.at(-1));
        } finally {
          // The run's databases go (the server may be a shared one); so does its data directory.
          await dropDatabases(mongo.url, SERVICES.map(dbName));
          rmSync(dataDir, { recursive: true, force: true });
          await kafka.stop();
        }
      } finally {
        await mongo.stop();
      }
    });

    if (on("IMPORT_BENCH_LISTMONK")) {
      // v1.1.0 from the module proxy; with LISTMONK_SRC (a clone of its
      // repository) the release at LISTMONK_REF (default its HEAD) as well.
      const builds: Array<() => Promise<ListmonkBuild | undefined>> = [async () => undefined];
      if (process.env.LISTMONK_SRC) builds.push(() => listmonkFromSource(process.env.LISTMONK_SRC!, process.env.LISTMONK_REF || "HEAD"));
      for (const build of builds) {
        await attempt("listmonk", async () => {
          const lm = await runListmonkImport(file, await build());
          console.log(lm);
          rows.push({
            run: `listmonk ${lm.version} (PostgreSQL)`,
            rows: file.rows,
            seconds: round(lm.seconds),
            rows_per_s: Math.round(file.rows / lm.seconds),
            created: lm.created,
            skipped: lm.imported - lm.created,
            failed: lm.skipped_lines,
            missing: lm.missing,
            extra: lm.extra,
            wrong: lm.wrong,
            peak_rss_mb: lm.peak_rss_mb,
            cpu_s: round(lm.cpu_s),
            db_cpu_s: round(lm.postgres_cpu_s),
            processes: { listmonk: { peak_rss_mb: lm.peak_rss_mb, cpu_s: round(lm.cpu_s) } },
            loadavg_start: lm.loadavg_start,
          });
        });
      }
    }

    // A good row not there exactly once fails the run; the systems' own
    // counts (listmonk's "skipped" and "failed" as derived above) differing
    // from what the file must give is only said (the table shows both).
    for (const r of rows) {
      if (r.missing > 0 || r.extra > 0 || r.wrong > 0) {
        failures.push(`${r.run}: ${r.missing} good addresses missing, ${r.extra} subscribers the file does not explain, ${r.wrong} with values not their first row's`);
      }
      if (r.report_ok === false) failures.push(`${r.run}: its report does not name every bad row once (see the warning above)`);
      const off = (["created", "skipped", "failed"] as const).filter((k) => r[k] !== expected[k]);
      if (off.length > 0) console.warn(`${r.run}: its ${off.join(", ")} differ from the file's ${JSON.stringify(expected)}`);
    }

    if (failures.length > 0) {
      console.error(`not recorded, ${failures.length} run(s) failed:\n${failures.join("\n")}`);
      process.exitCode = 1;
      return;
    }

    const notRun = ["IMPORT_BENCH_EMBEDDED", "IMPORT_BENCH_CRASH", "IMPORT_BENCH_SPLIT", "IMPORT_BENCH_LISTMONK"].filter((name) => !on(name));
    const at = new Date().toISOString();
    const results = { machine, rows: N, file: { bytes: file.bytes, expected, erased: file.erased.length, duplicates: file.duplicates, bad: file.badRows.length }, listmonk_params: LISTMONK_IMPORT_PARAMS, runs: rows, not_run: notRun, at };
    const dir = join(REPO, "bench", "results");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "import.json"), JSON.stringify(results, null, 2) + "\n");
    const ours = rows.find((r) => r.run.startsWith("emailsvc: embedded") && r.killed_at_rows === undefined);
    const theirs = rows.filter((r) => r.run.startsWith("listmonk"));
    const table = [
      `Run of ${at.slice(0, 16).replace("T", " ")} UTC on ${machine.cpus} × ${machine.cpu}, Node ${machine.node}, load at start ${machine.loadavg_start}; ${N.toLocaleString("en")} rows (${(file.bytes / 1e6).toFixed(1)} MB), of which ${file.badRows.length} not addresses, ${file.duplicates} repeats in the file, ${file.erased.length} erased beforehand: expected ${expected.created} created, ${expected.skipped} skipped, ${expected.failed} failed.`,
      "",
      "| run | rows | s | rows/s | created | skipped | failed | missing | extra | wrong | report: bad rows once | CPU s | DB CPU s | peak RSS MB (all processes) | load at its start |",
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---:|---:|---:|---:|---:|",
      ...rows.map(
        (r) =>
          `| ${r.run} | ${r.rows} | ${r.seconds} | ${r.rows_per_s} | ${r.created} | ${r.skipped} | ${r.failed} | ${r.missing} | ${r.extra} | ${r.wrong} | ${r.report_ok === undefined ? "—" : r.report_ok ? "yes" : "no"} | ${r.cpu_s} | ${r.db_cpu_s ?? "—"} | ${r.peak_rss_mb} | ${r.loadavg_start.split(" ")[0]} |`,
      ),
      ...(ours && theirs.length > 0
        ? ["", `Ratio (our embedded rows/s ÷ listmonk's): ${theirs.map((r) => `${(ours.rows_per_s / r.rows_per_s).toFixed(2)} against ${r.run.replace(" (PostgreSQL)", "")}`).join(", ")}.`]
        : []),
      ...(notRun.length > 0 ? ["", `Not run this time (\`=off\`): ${notRun.join(", ")}.`] : []),
    ].join("\n");
    writeResultsBlock(join(REPO, "bench", "README.md"), "import", "Subscriber import", table);
    console.log(table);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (require.main === module) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
