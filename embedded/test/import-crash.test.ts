import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MongoClient } from "mongodb";
import { startPlatformProcess, type PlatformProcess } from "@emailsvc/testing";
import { crashTestEnv, processCaller } from "./support/crash-campaign";
import { allItems, embeddedDocs } from "./support/platform-client";

// kill -9 in the middle of an import (issue 18): the platform process dies
// with a job running, starts again, and the job resumes from its last
// checkpoint: every good row is a subscriber exactly once (one document, one
// `subscriber.created` audit record), every bad row is in the report once,
// and the counts add up. On `npm start`'s defaults and on MongoDB with Kafka.
// (Events: each row's audit record and event are derived from the job and
// the row, ids included, so one audit record per subscriber shows that no
// row was carried out as two changes.)

const root = join(__dirname, "..", "..");
const ADMIN = "import-crash-admin-token-0123456789abcdef";
/** Rows of the file: fewer on FerretDB, which scans its collection for every lookup (it uses no index). */
const ROWS = { embedded: 20_000, servers: 2_000 };

const kafka = process.env.KAFKA_BROKERS;
const mongo = process.env.MONGO_URL;

/** Row n (1-based): every 10th a bad address, every 25th (not a 10th) a repeat of row n-1's address. */
function csv(rows: number): { text: string; good: number; bad: number[]; duplicates: number[] } {
  const lines = ["email,plan,tags"];
  const bad: number[] = [];
  const duplicates: number[] = [];
  let good = 0;
  for (let n = 1; n <= rows; n++) {
    if (n % 10 === 0) {
      lines.push(`broken-${n},p,`);
      bad.push(n);
    } else if (n % 25 === 0) {
      lines.push(`row${n - 1}@example.com,p,`);
      duplicates.push(n);
    } else {
      // Tags, so that a batch redone after the kill names them in its audit records and events.
      lines.push(`row${n}@example.com,p${n % 3},t${n % 3}`);
      good++;
    }
  }
  return { text: `${lines.join("\n")}\n`, good, bad, duplicates };
}

describe.each([
  { setup: "embedded store, in-process bus", servers: false },
  { setup: "Kafka, MongoDB-compatible store", servers: true },
])("an import across kill -9 ($setup)", ({ servers }) => {
  const dataDir = mkdtempSync(join(tmpdir(), "import-crash-"));
  let proc: PlatformProcess | undefined;
  let key = "";
  const namespace = `impcrash${Date.now().toString(36)}`;
  const start = () =>
    startPlatformProcess(
      root,
      crashTestEnv(
        { dataDir, adminToken: ADMIN, servers: servers ? { mongoUrl: mongo!, kafkaBrokers: kafka!, namespace } : undefined },
        {
          // Small batches (more checkpoints: time to kill it midway). On MongoDB a short lease, so that the restart takes
          // the job soon; on the embedded store an hour: the restarted process, the store's only one, must take the job
          // back at start without waiting out the dead process's lease.
          IMPORT_BATCH_ROWS: servers ? "100" : "200",
          IMPORT_LEASE_SECONDS: servers ? "2" : "3600",
        },
      ),
    );
  const call = processCaller(() => proc, ADMIN, () => key);

  beforeAll(async () => {
    if (servers && (!kafka || !mongo)) throw new Error("KAFKA_BROKERS and MONGO_URL are not set: run the tests through `npm test`, whose setup starts Kafka and FerretDB");
    // The process's services use the server's `subscribers` database, shared with earlier runs: a job an
    // earlier run left unfinished would be resumed first (one job at a time per process), so it is ended here.
    if (servers) await endEarlierJobs();
    proc = await start();
  }, 120_000);

  afterAll(async () => {
    await proc?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("imports every good row exactly once and reports every bad row once when killed mid-import and started again", async () => {
    const account = await call("POST", "/admin/v1/accounts", { name: "Import crash" }, true);
    key = (await call("POST", `/admin/v1/accounts/${account.body.id}/api-keys`, { mode: "test" }, true)).body.key;
    const tenant = `${account.body.id}:test`;
    const rows = servers ? ROWS.servers : ROWS.embedded;
    const file = csv(rows);
    // Three good rows' addresses erased beforehand (their owners asked): skipped `suppressed`, never created.
    const erasedRows = [3, 1001, 1503].filter((n) => n < rows);
    for (const n of erasedRows) {
      const created = await call("POST", "/api/v1/subscribers", { email: `row${n}@example.com` });
      expect(created.status).toBe(201);
      expect((await call("DELETE", `/api/v1/subscribers/${created.body.id}`)).status).toBe(204);
    }
    const createdRows = file.good - erasedRows.length;
    const posted = await fetch(`${proc!.url}/api/v1/subscribers/imports?metadata_columns=plan&tags_column=tags`, {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "text/csv" },
      body: file.text,
    });
    expect(posted.status).toBe(202);
    const id = ((await posted.json()) as { id: string }).id;

    // Midway: some rows read, the job not done.
    let job = (await call("GET", `/api/v1/subscribers/imports/${id}`)).body;
    for (let i = 0; i < 3000 && job.rows_read === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      job = (await call("GET", `/api/v1/subscribers/imports/${id}`)).body;
    }
    expect(job.rows_read).toBeGreaterThan(0);
    expect(job.state).toBe("running");
    await proc!.kill();
    proc = await start();

    for (let i = 0; i < 1200 && job.state !== "completed" && job.state !== "failed"; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      job = (await call("GET", `/api/v1/subscribers/imports/${id}`)).body;
    }
    expect(job).toMatchObject({ state: "completed", rows_read: rows, created: createdRows, updated: 0, skipped: file.duplicates.length + erasedRows.length, failed: file.bad.length });

    // Every good row once: as many subscribers as good rows (the erased ones not back), each address once.
    const subscribers = await allItems<{ id: string; email: string; tags: string[] }>((path) => call("GET", path), "/api/v1/subscribers");
    expect(subscribers).toHaveLength(createdRows);
    expect(new Set(subscribers.map((s) => s.email)).size).toBe(createdRows);
    for (const n of erasedRows) expect(subscribers.some((s) => s.email === `row${n}@example.com`)).toBe(false);
    for (const s of subscribers) expect(s.tags).toEqual([`t${Number(/^row(\d+)@/.exec(s.email)![1]) % 3}`]);

    // Every bad row once, in row order.
    const res = await fetch(`${proc!.url}/api/v1/subscribers/imports/${id}/errors`, { headers: { "x-api-key": key } });
    const reported = (await res.text()).trimEnd().split("\r\n").slice(1).map((line) => line.split(","));
    expect(reported.map((r) => Number(r[0]))).toEqual([...file.bad, ...file.duplicates, ...erasedRows].sort((a, b) => a - b));
    expect(reported.filter((r) => r[2] === "invalid_email")).toHaveLength(file.bad.length);
    expect(reported.filter((r) => r[2] === "duplicate_in_file")).toHaveLength(file.duplicates.length);
    expect(reported.filter((r) => r[2] === "suppressed").map((r) => Number(r[0]))).toEqual(erasedRows);

    // One subscriber.created audit record (source import) per subscriber: no change was made (or audited) twice.
    let imported: Array<Record<string, unknown>> = [];
    for (let i = 0; i < 100; i++) {
      imported = (await auditRecords(tenant)).filter((a) => a.type === "subscriber.created" && a.source === "import");
      if (imported.length >= createdRows) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(imported).toHaveLength(createdRows);
    expect(new Set(imported.map((a) => a.subscriber_id)).size).toBe(createdRows);
  }, 240_000);

  async function endEarlierJobs(): Promise<void> {
    const client = await MongoClient.connect(mongo!, { serverSelectionTimeoutMS: 5000 });
    try {
      await client.db("subscribers").collection("imports").updateMany({ state: { $in: ["uploading", "queued", "running"] } }, { $set: { state: "failed", failure: "ended_by_test" } });
    } finally {
      await client.close();
    }
  }

  async function auditRecords(tenant: string): Promise<Array<Record<string, unknown>>> {
    if (!servers) return embeddedDocs(join(dataDir, "subscribers", "subscriber_events.db")).filter((d) => d.tenant === tenant);
    const client = await MongoClient.connect(mongo!, { serverSelectionTimeoutMS: 5000 });
    try {
      return (await client.db("subscribers").collection("subscriber_events").find({ tenant }).toArray()) as unknown as Array<Record<string, unknown>>;
    } finally {
      await client.close();
    }
  }
});
