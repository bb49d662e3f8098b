// listmonk's side of the import benchmark: its own CSV import (admin API
// `POST /api/import/subscribers`, polled until `finished`) of the same file.
//
// How listmonk v1.1.0 imports (internal/subimporter): it copies the upload to
// a temporary file, counts its lines, then one goroutine parses the CSV
// (columns `email`, `name`, `attributes` as JSON; others ignored), validates
// each row (Go's mail.ParseAddress, a name of 1–200 characters; a row that
// fails is logged and skipped) and queues it to a second goroutine, which runs
// one upsert statement per row (subscriber, then its list subscriptions) in a
// transaction committed every 10,000 rows. Its progress is a count of rows
// committed; it has no per-row report beyond a log, and its only settings are
// the request's (mode, status, overwrite, delimiter, lists).
import { openAsBlob, readFileSync } from "node:fs";
import { basename } from "node:path";
import { startListmonk, type ListmonkBuild } from "../support/listmonk.js";
import { cpuSeconds, peakRssMb } from "../support/process.js";
import type { ImportFile } from "./generate.js";

/**
 * The request's options. `subscribe` with status `confirmed` (an import of
 * people who opted in elsewhere, as ours creates them active), no overwrite
 * (an address already there, or again later in the file, keeps its first
 * values: our `create` mode), into the default list.
 */
export const LISTMONK_IMPORT_PARAMS = {
  mode: "subscribe",
  subscription_status: "confirmed",
  overwrite: false,
  // Later releases split `overwrite` in two; v1.1.0 ignores these.
  overwrite_userinfo: false,
  overwrite_subscription_status: false,
  delim: ",",
  lists: [1],
};

export interface ListmonkImportResult {
  version: string;
  seconds: number;
  /** Its own counts: rows in the file (its line count less the header), rows it committed. */
  total: number;
  imported: number;
  /** Rows its log says it skipped (not an address, no name, too few columns). */
  skipped_lines: number;
  /** By its database afterwards: subscribers created by the import (enabled), and those already blocklisted before. */
  created: number;
  blocklisted: number;
  /** Good addresses with no subscriber, and subscribers the file does not explain. */
  missing: number;
  extra: number;
  /** Subscribers whose name or attributes are not their address's first row's. */
  wrong: number;
  peak_rss_mb: number;
  cpu_s: number;
  postgres_cpu_s: number;
  /** /proc/loadavg as the import started. */
  loadavg_start: string;
}

const sqlString = (s: string) => `'${s.replace(/'/g, "''")}'`;

/** One import of `file` by a fresh listmonk (`build`: v1.1.0 from the module proxy unless given). */
export async function runListmonkImport(file: ImportFile, build?: ListmonkBuild, log: (line: string) => void = console.log): Promise<ListmonkImportResult> {
  const listmonk = await startListmonk({
    ...(build ? { build } : {}),
    settings: {},
    log,
    // Setup, not timed: the two example subscribers --install creates removed,
    // and the addresses ours has erased beforehand put in as blocklisted (the
    // nearest listmonk has: its import keeps their status).
    setup: async (psql) => {
      await psql("DELETE FROM subscribers");
      for (let i = 0; i < file.erased.length; i += 1000) {
        const values = file.erased.slice(i, i + 1000).map((address) => `(gen_random_uuid(), ${sqlString(address)}, 'Erased', '{}'::jsonb, 'blocklisted')`);
        await psql(`INSERT INTO subscribers (uuid, email, name, attribs, status) VALUES ${values.join(",")}`);
      }
    },
  });
  try {
    const form = new FormData();
    form.set("params", JSON.stringify(LISTMONK_IMPORT_PARAMS));
    // Its handler takes a file whose name ends in .csv as CSV (anything else as a ZIP).
    form.set("file", await openAsBlob(file.path, { type: "text/csv" }), basename(file.path).replace(/\.[^.]*$/, "") + ".csv");
    const cpu0 = cpuSeconds(listmonk.pid);
    const pgCpu0 = listmonk.postgresCpuSeconds();
    const loadavg = readFileSync("/proc/loadavg", "utf8").trim();
    const t0 = performance.now();
    const started = await fetch(`${listmonk.base}/api/import/subscribers`, { method: "POST", headers: listmonk.auth, body: form });
    if (!started.ok) throw new Error(`listmonk POST /api/import/subscribers: ${started.status} ${await started.text()}`);
    let stats: { status: string; total: number; imported: number };
    let lastLog = 0;
    let lastImported = -1;
    let lastProgress = performance.now();
    for (;;) {
      stats = (await listmonk.call("GET", "/api/import/subscribers")).data;
      if (stats.status !== "importing" && stats.status !== "stopping") break;
      // Its counter moves every 10,000 rows; a statement that fails ends its
      // committing goroutine while the reader waits on the queue for ever.
      if (stats.imported !== lastImported) {
        lastImported = stats.imported;
        lastProgress = performance.now();
      } else if (performance.now() - lastProgress > 5 * 60_000) {
        throw new Error(`listmonk's import stalled at ${stats.imported} of ${stats.total}:\n${(await listmonk.call("GET", "/api/import/subscribers/logs")).data}`);
      }
      if (performance.now() - lastLog > 5000) {
        lastLog = performance.now();
        log(`  listmonk ${listmonk.version}: ${((performance.now() - t0) / 1000).toFixed(1)} s, ${stats.imported} of ${stats.total} imported`);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const seconds = (performance.now() - t0) / 1000;
    const cpu = cpuSeconds(listmonk.pid) - cpu0;
    const postgresCpu = listmonk.postgresCpuSeconds() - pgCpu0;
    if (stats.status !== "finished") throw new Error(`listmonk's import ended ${stats.status}:\n${(await listmonk.call("GET", "/api/import/subscribers/logs")).data}`);
    const logs = String((await listmonk.call("GET", "/api/import/subscribers/logs")).data);
    const skippedLines = logs.split("\n").filter((line) => line.includes("skipping")).length;

    // Every good row exactly once, by its tables (email is unique there).
    // Fields separated by a tab (no value holds one).
    const rows = (
      await listmonk.psql(
        "SELECT s.email, s.status, count(sl.list_id), s.name, coalesce(s.attribs->>'city', ''), coalesce(s.attribs->>'plan', '') FROM subscribers s LEFT JOIN subscriber_lists sl ON sl.subscriber_id = s.id AND sl.list_id = 1 GROUP BY s.id",
        "\t",
      )
    )
      .split("\n")
      .filter(Boolean)
      .map((line) => line.split("\t"));
    const erased = new Set(file.erased);
    const expected = new Set(file.good);
    const present = new Set<string>();
    let extra = 0;
    let created = 0;
    let blocklisted = 0;
    let wrong = 0;
    for (const [email, status, lists, name, city, plan] of rows) {
      const want = erased.has(email!) ? undefined : file.values.get(email!);
      if (want && (name !== want.name || city !== want.city || plan !== want.plan)) wrong++;
      if (!expected.has(email!) || lists !== "1") extra++;
      present.add(email!);
      if (status === "enabled" && !erased.has(email!)) created++;
      if (status === "blocklisted" && erased.has(email!)) blocklisted++;
    }
    const missing = file.good.filter((address) => !present.has(address)).length;
    return {
      version: listmonk.version,
      seconds,
      total: stats.total,
      imported: stats.imported,
      skipped_lines: skippedLines,
      created,
      blocklisted,
      missing,
      extra,
      wrong,
      peak_rss_mb: peakRssMb(listmonk.pid),
      cpu_s: cpu,
      postgres_cpu_s: postgresCpu,
      loadavg_start: loadavg,
    };
  } finally {
    await listmonk.stop();
  }
}
