import { derivedId } from "@emailsvc/ids";
import { newOutbox, withOutbox } from "@emailsvc/outbox";
import {
  checkRow,
  CsvReader,
  csvRow,
  headerIndex,
  IMPORT_LIMITS,
  isRowProblem,
  ndjsonRow,
  NdjsonReader,
  TOO_LONG,
  type ImportCounts,
  type ImportRow,
  type RowProblem,
} from "../domain/import.js";
import { checkMetadataSize, type Metadata } from "../domain/subscriber.js";
import { isErasureMarker } from "../domain/suppression.js";
import { tagKey } from "../domain/tag.js";
import type { ImportErrorDoc, ImportJobDoc, OutboxEntry, SubscriberDoc, TagDoc } from "../storage/documents.js";
import { markersOf, outboxEntry, suppressionsOf, type Scope } from "./deps.js";
import { ensureTags } from "./ensure-tags.js";
import type { ImportDeps } from "./import-deps.js";
import { reportId } from "./list-import-errors.js";
import { dropUpload } from "./start-import.js";

// Runs a claimed import job (issue 18): reads the stored upload from the
// start, skips the rows the checkpoint says are done, and handles the rest a
// batch at a time: one lookup of the batch's addresses, one of their
// suppression entries, tags ensured once per distinct name, one insertMany of
// the new subscribers, guarded updates of present ones (upsert), one
// insertMany of report rows, the outboxes carried out together, and then the
// checkpoint (row and counts, one write). A batch re-applied after a crash
// writes nothing twice: new subscribers have ids derived from the job and
// the row (a repeat clashes), updated ones carry `last_import` (`<job>:<row>`)
// and the update is guarded by it, report rows are keyed by job and row; the
// counts are recomputed from what the store then shows, so none counts twice.

/** What the worker gives a run: whether it still holds the job (renewing its lease), checked after each batch. */
export interface ImportLease {
  renew(): Promise<boolean>;
}

/** One data row as read: its number and either its fields checked or its problem. */
interface ReadRow {
  row: number;
  result: ImportRow | RowProblem;
}

type Outcome = "created" | "updated" | "skipped" | "failed";

/** Reads a job's rows in order from its stored chunks, holding no more than a chunk's rows at a time. */
async function* readRows(deps: ImportDeps, scope: Scope, job: ImportJobDoc): AsyncGenerator<ReadRow | { fatal: string }> {
  const decoder = new TextDecoder("utf-8");
  const tooLong: RowProblem = { field: "row", code: "row_too_long", detail: `a row is at most ${IMPORT_LIMITS.rowChars} characters and ${IMPORT_LIMITS.columns} columns` };
  let row = 0;
  const csv = job.format === "csv" ? new CsvReader(job.delimiter) : undefined;
  const ndjson = job.format === "ndjson" ? new NdjsonReader() : undefined;
  let index: Map<string, number> | undefined;
  const records: Array<string[] | string | typeof TOO_LONG> = [];
  // The rows of the records read so far; a row before the checkpoint is only counted.
  const take = function* (): Generator<ReadRow | { fatal: string }> {
    for (const record of records.splice(0)) {
      if (csv && !index) {
        if (!Array.isArray(record)) return yield { fatal: "header_too_long" };
        // A byte order mark before the first header is no part of its name.
        if (record[0]?.startsWith("\ufeff")) record[0] = record[0].slice(1);
        const found = headerIndex(record, job.columns);
        if (found.missing.length > 0) return yield { fatal: "missing_columns" };
        index = found.index;
        continue;
      }
      row++;
      // A blank NDJSON line is no row to report (its number is still taken, so rows are line numbers).
      if (record === "") continue;
      if (row <= job.row) yield { row, result: SEEN };
      else if (record === TOO_LONG) yield { row, result: tooLong };
      else if (typeof record === "string") {
        const raw = ndjsonRow(record);
        yield { row, result: isRowProblem(raw) ? raw : checkRow(raw) };
      } else yield { row, result: checkRow(csvRow(record, index!, job.columns)) };
    }
  };
  for (let seq = 0; seq < job.chunk_count; seq++) {
    const chunk = await deps.spool.get(scope.importChunks, job._id, seq);
    if (!chunk) return yield { fatal: "upload_missing" };
    const text = decoder.decode(chunk, { stream: true });
    if (csv) csv.push(text, records as Array<string[] | typeof TOO_LONG>);
    else ndjson!.push(text, records as Array<string | typeof TOO_LONG>);
    yield* take();
  }
  const rest = decoder.decode();
  if (csv) {
    csv.push(rest, records as Array<string[] | typeof TOO_LONG>);
    csv.end(records as Array<string[] | typeof TOO_LONG>);
  } else {
    ndjson!.push(rest, records as Array<string | typeof TOO_LONG>);
    ndjson!.end(records as Array<string | typeof TOO_LONG>);
  }
  yield* take();
  if (csv && !index) yield { fatal: "missing_header" };
}

/** Marks a row done before the checkpoint: read for its number, not handled again. */
const SEEN: RowProblem = { field: "", code: "", detail: "" };

/** Runs the job to its end (or until its lease is lost); the job is `running`, held by the caller. */
export async function runImport(deps: ImportDeps, scope: Scope, job: ImportJobDoc, lease: ImportLease): Promise<void> {
  const counts: ImportCounts = { ...job.counts };
  let batch: ReadRow[] = [];
  let lastRow = job.row;
  const flush = async (): Promise<boolean> => {
    if (batch.length > 0) {
      const outcomes = await applyBatch(deps, scope, job, batch);
      for (const outcome of outcomes) counts[outcome]++;
      counts.rows_read += batch.length;
      lastRow = batch[batch.length - 1]!.row;
      batch = [];
    }
    if (!(await lease.renew())) return false;
    const saved = await scope.imports.updateOne({ _id: job._id, state: "running", lease_owner: job.lease_owner }, { $set: { row: lastRow, counts, updated_at: deps.now() } });
    return saved !== null;
  };
  for await (const item of readRows(deps, scope, job)) {
    if ("fatal" in item) return finish(deps, scope, job, "failed", item.fatal);
    if (item.result === SEEN) continue;
    if (item.row > IMPORT_LIMITS.rows) {
      if (!(await flush())) return;
      return finish(deps, scope, job, "failed", "too_many_rows");
    }
    batch.push(item);
    if (batch.length >= deps.batchRows && !(await flush())) return;
  }
  if (!(await flush())) return;
  await finish(deps, scope, job, "completed", "");
}

async function finish(deps: ImportDeps, scope: Scope, job: ImportJobDoc, state: "completed" | "failed", failure: string): Promise<void> {
  const now = deps.now();
  const done = await scope.imports.updateOne(
    { _id: job._id, state: "running", lease_owner: job.lease_owner },
    { $set: { state, failure, finished_at: now, updated_at: now, lease_owner: "", lease_until: 0 } },
  );
  // The upload is not needed once the job is over (its report stays).
  if (done) await dropUpload(deps, scope, job._id);
}

/** The job's row marker on the documents it changes. */
function marker(jobId: string, row: number): string {
  return `${jobId}:${row}`;
}

/** The row of this job that last changed a subscriber, if it was this job. */
function rowOf(jobId: string, lastImport: string | undefined): number | undefined {
  if (!lastImport?.startsWith(`${jobId}:`)) return undefined;
  return Number(lastImport.slice(jobId.length + 1));
}

/** Handles one batch; the outcome of each row, in order. */
async function applyBatch(deps: ImportDeps, scope: Scope, job: ImportJobDoc, rows: readonly ReadRow[]): Promise<Outcome[]> {
  const outcomes = new Map<number, Outcome>();
  const report: Array<Omit<ImportErrorDoc, "tenant">> = [];
  const problem = (row: number, outcome: "skipped" | "failed", p: RowProblem) => {
    outcomes.set(row, outcome);
    report.push({ _id: reportId(job._id, row), job_id: job._id, row, field: p.field, code: p.code, detail: p.detail });
  };
  const valid: Array<{ row: number; data: ImportRow }> = [];
  for (const { row, result } of rows) {
    if (isRowProblem(result)) problem(row, "failed", result);
    else valid.push({ row, data: result });
  }
  const keys = [...new Set(valid.map((v) => v.data.key))];
  const [present, listed] = await Promise.all([
    keys.length > 0 ? scope.subscribers.find({ email_key: { $in: keys }, deleted: false }) : Promise.resolve([]),
    suppressionsOf(deps, scope, keys),
  ]);
  const byKey = new Map(present.map((doc) => [doc.email_key, doc]));

  const inserts: Array<{ row: number; data: ImportRow; resubscribed: boolean }> = [];
  const redo: Created[] = [];
  const updates: Array<{ row: number; data: ImportRow; current: SubscriberDoc }> = [];
  const seen = new Set<string>();
  for (const { row, data } of valid) {
    if (seen.has(data.key)) {
      problem(row, "skipped", { field: "email", code: "duplicate_in_file", detail: "an earlier row of the file has this address" });
      continue;
    }
    seen.add(data.key);
    const current = byKey.get(data.key);
    const doneAt = rowOf(job._id, current?.last_import);
    if (current && doneAt !== undefined) {
      if (doneAt === row) {
        // Done before a crash: counted again; a row this job created has its audit record and event carried out again (same ids: no second one).
        const created = current._id === subscriberId(job, row);
        outcomes.set(row, created ? "created" : "updated");
        if (created) redo.push({ row, data, doc: current, resubscribed: listed.has(data.key) && isErasureMarker(listed.get(data.key)!) });
      }
      else problem(row, "skipped", { field: "email", code: "duplicate_in_file", detail: "an earlier row of the file has this address" });
      continue;
    }
    if (current) {
      if (job.mode === "create") problem(row, "skipped", { field: "email", code: "exists", detail: "a subscriber with this address exists" });
      else updates.push({ row, data, current });
      continue;
    }
    const entry = listed.get(data.key);
    if (entry && !job.resubscribe) {
      problem(row, "skipped", { field: "email", code: "suppressed", detail: `the address is on the suppression list (${entry.reason ?? "erased"})` });
      continue;
    }
    inserts.push({ row, data, resubscribed: entry !== undefined && isErasureMarker(entry) });
  }

  const tagNames = new Map<string, string>();
  // The rows redone after a crash too: their audit records and events name their tags.
  for (const { data } of [...inserts, ...updates, ...redo]) for (const name of data.tags) if (!tagNames.has(tagKey(name))) tagNames.set(tagKey(name), name);
  const tags = new Map((await ensureTags(deps, scope, [...tagNames.values()])).map((t) => [t.name_key, t]));
  const tagsOf = (names: string[]): TagDoc[] => names.map((n) => tags.get(tagKey(n))!);

  const written: SubscriberDoc[] = [];
  await insertRows(deps, scope, job, inserts, redo, tagsOf, outcomes, problem);
  await updateRows(deps, scope, job, updates, tagsOf, outcomes, written, problem);
  if (report.length > 0) await scope.importErrors.insertMany(report);
  await deps.relay.afterWriteMany(written);
  return rows.map(({ row }) => outcomes.get(row) ?? "failed");
}

function subscriberId(job: ImportJobDoc, row: number): string {
  return derivedId("sub", job.created_at, job._id, row);
}

type Report = (row: number, outcome: "skipped" | "failed", p: RowProblem) => void;

/** A subscriber this job created from a row (now, or before a crash). */
interface Created {
  row: number;
  data: ImportRow;
  doc: SubscriberDoc;
  resubscribed: boolean;
}

/**
 * The `subscriber.created` entry of a row, derived from the job and the row
 * alone (its id too), so that a batch carried out again after a crash makes
 * the same audit record (a duplicate, skipped) and the same event (the same
 * event id, which consumers deduplicate).
 */
function createdEntry(scope: Scope, job: ImportJobDoc, c: Created, tagsOf: (names: string[]) => TagDoc[]): OutboxEntry {
  const rowTags = tagsOf(c.data.tags);
  const entry = outboxEntry(scope, c.doc.created_at, "subscriber.created", {
    status: c.doc.status,
    tags: rowTags.map((t) => t.name),
    tag_ids: c.doc.tag_ids,
    import_id: job._id,
    row: c.row,
    ...(c.resubscribed ? { resubscribe: true, resubscribe_reason: job.resubscribe_reason } : {}),
  }, { topic: "subscriber.created", tag_ids: c.doc.tag_ids, to: c.doc.status, import_id: job._id, run_triggers: job.run_triggers });
  return { ...entry, id: derivedId("evt", job.created_at, `${job._id}:created`, c.row) };
}

/**
 * New subscribers: one insertMany, then their audit records and events
 * (kept by the job, not in each document's outbox: clearing 1,000 outboxes
 * was most of a batch's cost on FerretDB, and the job's checkpoint already
 * says which rows are done), then the erasure markers of the resubscribed.
 */
async function insertRows(
  deps: ImportDeps,
  scope: Scope,
  job: ImportJobDoc,
  inserts: ReadonlyArray<{ row: number; data: ImportRow; resubscribed: boolean }>,
  redo: Created[],
  tagsOf: (names: string[]) => TagDoc[],
  outcomes: Map<number, Outcome>,
  problem: Report,
): Promise<void> {
  const created: Created[] = [...redo];
  if (inserts.length > 0) {
    const now = deps.now();
    const docs = inserts.map(({ row, data }): SubscriberDoc => ({
      _id: subscriberId(job, row),
      tenant: scope.subscribers.tenant,
      email: data.email,
      email_key: data.key,
      status: data.status ?? "active",
      locale: data.locale ?? "",
      metadata: data.metadata,
      tag_ids: tagsOf(data.tags).map((t) => t._id),
      created_at: now,
      updated_at: now,
      deleted: false,
      last_import: marker(job._id, row),
      ...newOutbox<OutboxEntry>([]),
    }));
    const result = await scope.subscribers.insertMany(docs.map(({ tenant: _tenant, ...doc }) => doc));
    const clashed = new Set(result.duplicates);
    docs.forEach((doc, i) => {
      if (clashed.has(i)) return;
      outcomes.set(inserts[i]!.row, "created");
      created.push({ ...inserts[i]!, doc });
    });
    if (clashed.size > 0) {
      // A clash is this row written meanwhile by another worker of the job (its own id), or the address taken by another create.
      const again = await scope.subscribers.find({ email_key: { $in: [...clashed].map((i) => docs[i]!.email_key) } });
      const ours = new Map(again.map((d) => [d._id, d]));
      for (const i of clashed) {
        const { row } = inserts[i]!;
        const doc = ours.get(docs[i]!._id);
        if (doc) {
          outcomes.set(row, "created");
          created.push({ ...inserts[i]!, doc });
        } else problem(row, "skipped", { field: "email", code: "exists", detail: "a subscriber with this address exists" });
      }
    }
  }
  await deps.relay.carryOut(created.map((c) => ({ doc: c.doc, entry: createdEntry(scope, job, c, tagsOf) })));
  // Erased addresses imported again (resubscribe): their suppression goes once their subscriber exists and is audited, as on a single create.
  const lifted = created.filter((c) => c.resubscribed).flatMap((c) => markersOf(deps, scope, c.data.key));
  if (lifted.length > 0) await scope.suppressions.deleteMany({ _id: { $in: lifted } });
}

/** Present subscribers in upsert mode: tags added, the row's metadata keys replaced, the status only when the file has a status column. */
async function updateRows(
  deps: ImportDeps,
  scope: Scope,
  job: ImportJobDoc,
  updates: ReadonlyArray<{ row: number; data: ImportRow; current: SubscriberDoc }>,
  tagsOf: (names: string[]) => TagDoc[],
  outcomes: Map<number, Outcome>,
  written: SubscriberDoc[],
  problem: Report,
): Promise<void> {
  // A few at a time: each is its own guarded single-document write.
  const queue = [...updates];
  const worker = async () => {
    for (let next = queue.shift(); next; next = queue.shift()) {
      const doc = await updateOne(deps, scope, job, next.row, next.data, next.current, tagsOf, problem);
      if (doc === "failed") continue;
      outcomes.set(next.row, "updated");
      if (doc) written.push(doc);
    }
  };
  await Promise.all(Array.from({ length: Math.min(8, queue.length) }, worker));
}

async function updateOne(
  deps: ImportDeps,
  scope: Scope,
  job: ImportJobDoc,
  row: number,
  data: ImportRow,
  first: SubscriberDoc,
  tagsOf: (names: string[]) => TagDoc[],
  problem: Report,
): Promise<SubscriberDoc | null | "failed"> {
  let current: SubscriberDoc | null = first;
  for (let attempt = 0; current && attempt < 5; attempt++) {
    const now = deps.now();
    const entries: OutboxEntry[] = [];
    const set: Partial<SubscriberDoc> = { last_import: marker(job._id, row) };
    const metadata: Metadata = { ...current.metadata, ...data.metadata };
    const changed: string[] = [];
    if (JSON.stringify(metadata) !== JSON.stringify(current.metadata)) {
      try {
        checkMetadataSize(metadata);
      } catch {
        problem(row, "failed", { field: "metadata", code: "metadata_too_large", detail: "merged with the subscriber's metadata it would be too large" });
        return "failed";
      }
      set.metadata = metadata;
      changed.push("metadata");
    }
    if (data.locale !== undefined && data.locale !== (current.locale ?? "")) {
      set.locale = data.locale;
      changed.push("locale");
    }
    if (changed.length > 0) entries.push(outboxEntry(scope, now, "subscriber.updated", { fields: changed, import_id: job._id, row }, null));
    const known = new Set(current.tag_ids);
    const added = tagsOf(data.tags).filter((t) => !known.has(t._id));
    if (added.length > 0) {
      set.tag_ids = [...current.tag_ids, ...added.map((t) => t._id)];
      for (const tag of added) {
        entries.push(outboxEntry(scope, now, "subscriber.tag_added", { tag: tag.name, tag_id: tag._id, import_id: job._id, row }, { topic: "subscriber.tag_added", tag_id: tag._id }));
      }
    }
    if (data.status !== undefined && data.status !== current.status) {
      set.status = data.status;
      entries.push(
        outboxEntry(scope, now, "subscriber.status_changed", { from: current.status, to: data.status, import_id: job._id, row }, {
          topic: "subscriber.status_changed",
          from: current.status,
          to: data.status,
        }),
      );
    }
    // Nothing changes but the marker: no outbox, no version bump needed beyond the guard.
    const update = entries.length > 0 ? withOutbox<SubscriberDoc, OutboxEntry>({ $set: set }, entries, now) : { $set: set };
    const doc = await scope.subscribers.updateOne({ _id: current._id, version: current.version, deleted: false, last_import: { $ne: marker(job._id, row) } }, update);
    if (doc) return entries.length > 0 ? doc : null;
    // Changed meanwhile (or gone): read it again and merge into what it is now.
    current = await scope.subscribers.findOne({ _id: current._id, deleted: false });
    if (current && current.last_import === marker(job._id, row)) return null;
  }
  if (!current) {
    problem(row, "skipped", { field: "email", code: "exists", detail: "the subscriber with this address was deleted meanwhile" });
    return "failed";
  }
  problem(row, "failed", { field: "email", code: "conflict", detail: "the subscriber kept changing meanwhile; import the row again" });
  return "failed";
}
