// Delivery's two writes of a campaign email's record on the embedded store,
// alone: its intake (insertMany of records stored claimed, 100 a call, as a
// hand-over batch) and its outcome (`sent`, updateEach of the writes of one
// turn). The record as stored before (every field; the outcome a $set with
// the sent change pushed into the history) against the record as stored now
// (services/delivery/src/storage/documents.ts: no fields holding their
// defaults, `to` only as `to_key`; the outcome a $set alone). CPU seconds of
// the process and the datafile's bytes, interleaved, in one process.
//
// `npm run bench:record -w @emailsvc/bench` (RECORD_BENCH_N recipients, default 20,000;
// RECORD_BENCH_ROUNDS pairs, default 3). Prints its table; writes nothing.
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EMAIL_INDEXES, withoutEmailDefaults, type EmailDoc } from "@emailsvc/delivery";
import { newId } from "@emailsvc/ids";
import { openEmbeddedStore, type AnyDoc } from "@emailsvc/storage";

type Shape = "before" | "now";

/** A campaign email's record at its intake, as campaign-intake.ts builds it (claimed by `token`). */
function intakeRecord(shape: Shape, ids: { tenant: string; campaign: string; template: string }, i: number, token: string, now: number): AnyDoc {
  const id = newId("eml");
  const to = `subscriber${i}@example.com`;
  const record: EmailDoc = {
    _id: id,
    tenant: ids.tenant,
    to,
    to_key: to,
    subscriber_id: newId("sub"),
    campaign_id: ids.campaign,
    template_id: ids.template,
    template_slug: "bench-newsletter",
    template_version: 1,
    variables_json: "{}",
    idempotency_key: "",
    idem_key: `none:${id}`,
    request_hash: "",
    status: "queued",
    provider: "smtp",
    message_id: "",
    error: "",
    last_error: "",
    attempts: 1,
    transient_failures: 0,
    lease_until: now + 30_000,
    lease_token: token,
    queued_at: now,
    sent_at: null,
    failed_at: null,
    updated_at: now,
    status_history: [{ status: "queued", at: now, detail: "" }],
    version: 1,
    outbox: [],
    outbox_pending: false,
  };
  // Now: what delivery's storage stores of it (no defaulted fields; an address given in lower case once, as `to_key`).
  return (shape === "before" ? record : withoutEmailDefaults(record)) as unknown as AnyDoc;
}

/** The outcome's update of one sent email, as deliver-email.ts's settle makes it. */
function sentUpdate(shape: Shape, id: string, at: number) {
  const $set = { status: "sent", sent_at: at, message_id: `<${id}@example.com>`, subject: "The bench's newsletter", updated_at: at };
  return {
    filter: { _id: id, status: { $in: ["queued", "deferred"] } },
    update: shape === "before" ? { $set, $push: { status_history: { $each: [{ status: "sent", at, detail: "" }] } } } : { $set },
  };
}

/** One campaign of `n` recipients through both writes; CPU seconds and the datafile's bytes. */
export async function recordWrites(shape: Shape, n: number): Promise<{ cpuS: number; bytes: number }> {
  const dataDir = mkdtempSync(join(tmpdir(), "bench-record-"));
  const store = await openEmbeddedStore({ dataDir });
  try {
    const emails = store.collection("emails");
    await emails.createIndexes(EMAIL_INDEXES);
    const ids = { tenant: `${newId("acc")}:live`, campaign: newId("cmp"), template: newId("tpl") };
    const started = process.cpuUsage();
    for (let first = 0; first < n; first += 100) {
      const now = Date.now();
      const batch = Array.from({ length: Math.min(100, n - first) }, (_, k) => intakeRecord(shape, ids, first + k, "abcdefghijkl", now));
      await emails.insertMany(batch);
      // The outcomes of one turn go in one updateEach: here each batch's, 50 at a time.
      for (let k = 0; k < batch.length; k += 50) {
        const at = Date.now();
        await emails.updateEach(batch.slice(k, k + 50).map((record) => sentUpdate(shape, record._id, at)));
      }
    }
    const used = process.cpuUsage(started);
    // Before the close, which rewrites the file to its live lines.
    const bytes = statSync(join(dataDir, "emails.db")).size;
    await store.close();
    return { cpuS: (used.user + used.system) / 1e6, bytes };
  } finally {
    await store.close().catch(() => undefined);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const n = Number(process.env.RECORD_BENCH_N ?? 20_000);
  const rounds = Number(process.env.RECORD_BENCH_ROUNDS ?? 3);
  // A warm-up of each, unmeasured: the first campaign of a process pays V8's compilation.
  await recordWrites("before", 2_000);
  await recordWrites("now", 2_000);
  const rows: string[] = [];
  for (let round = 1; round <= rounds; round += 1) {
    for (const shape of round % 2 === 1 ? (["before", "now"] as const) : (["now", "before"] as const)) {
      const { cpuS, bytes } = await recordWrites(shape, n);
      rows.push(`| ${round} | ${shape} | ${cpuS.toFixed(2)} | ${((cpuS / n) * 1e6).toFixed(1)} | ${(bytes / n).toFixed(0)} |`);
      console.log(rows.at(-1));
    }
  }
  console.log(["| round | record | CPU s | µs a recipient | datafile B a recipient |", "|---|---|---|---|---|", ...rows].join("\n"));
}

if (process.argv[1]?.endsWith("record/run.js")) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
