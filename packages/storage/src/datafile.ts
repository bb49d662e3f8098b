// The embedded store's datafile, in NeDB's format so that data directories
// written by earlier versions (NeDB itself) load, and NeDB could load ours:
// one serialised document per line (NeDB's `serialize`: JSON, Dates as
// `{"$$date":ms}`), later lines winning over earlier ones for the same `_id`,
// `{"$$deleted":true,"_id":…}` for a removal, `{"$$indexCreated":{…}}` and
// `{"$$indexRemoved":"<fieldName>"}` for index definitions. Appends go through
// the GroupAppender; a rewrite (compaction) is crash safe as NeDB's
// crashSafeWriteFileLines: temp file, fsync, rename, fsync of the directory.

/// <reference path="./nedb-model.d.ts" />
import { constants as fsConstants, promises as fs } from "node:fs";
import * as path from "node:path";
import { deserialize, serialize } from "@seald-io/nedb/lib/model.js";
import { dateSeen, mayHoldDates, type PlainObject } from "./checks.js";

/** NeDB's default mode for datafiles. */
export const FILE_MODE = 0o644;

/**
 * Share of corrupt lines above which a datafile is refused rather than loaded
 * without them (NeDB's corruptAlertThreshold, with its default).
 */
export const CORRUPT_ALERT_THRESHOLD = 0.1;

/** An index definition line as NeDB writes it (fieldName, unique, sparse) plus what we add (NeDB ignores extra properties). */
export interface RawIndex {
  /** NeDB's key: the index's fields sorted and comma-joined. */
  fieldName: string;
  unique?: boolean;
  sparse?: boolean;
  /** Ours: IndexSpec.name. */
  name?: string;
  /** Ours: the fields in declared order. */
  fields?: string[];
  /** Ours: IndexSpec.arrayField. */
  arrayField?: string;
}

export interface LoadedDatafile {
  /** Where each live document's last line starts, by `_id` (the line is read again by loadLiveLines). */
  live: Map<string, number>;
  /** The index definitions by fieldName. */
  indexes: Map<string, RawIndex>;
  /** Non-empty lines read, corrupt ones included. */
  lines: number;
  /** Lines that could not be read (dropped). */
  corrupt: number;
  /** Whether the file ended in an unreadable line without its newline: an append a crash cut short (dropped from the file, not counted as corrupt). */
  tornTail: boolean;
  /** The file's size once loaded (each line, the last included, ends in a newline): where the next append starts. */
  size: number;
}

/** One document as one datafile line (without the newline): NeDB's serialize, fast when no Date is in it. */
export function serializeDoc(doc: PlainObject): string {
  // NeDB's serialize runs a replacer on every value (Dates to {$$date}); plain
  // JSON is the same text without Dates, which the port does not promise anyway
  // (and which no document holds until one was stored: mayHoldDates).
  return mayHoldDates() && hasDate(doc) ? serialize(doc) : JSON.stringify(doc);
}

function hasDate(value: unknown): boolean {
  if (typeof value !== "object" || value === null) return false;
  if (value instanceof Date) return true;
  if (Array.isArray(value)) {
    for (const element of value) if (hasDate(element)) return true;
    return false;
  }
  for (const key in value) if (hasDate((value as PlainObject)[key])) return true;
  return false;
}

export function deletionLine(id: string): string {
  return JSON.stringify({ $$deleted: true, _id: id });
}

export function indexLine(raw: RawIndex): string {
  return JSON.stringify({ $$indexCreated: raw });
}

export function parseLine(line: string): unknown {
  // NeDB's deserialize runs a reviver on every value; only a line with a Date needs it.
  if (!line.includes('"$$date"')) return JSON.parse(line);
  dateSeen();
  return deserialize(line);
}

/**
 * Calls `take` with each non-empty line of the file (text without its
 * newline, byte offset, byte length, whether it is an unterminated last line)
 * whose offset `wanted` accepts (all without it); answers the bytes up to the
 * last newline and the file's size.
 */
async function scanLines(
  filename: string,
  take: (line: string, at: number, len: number, last: boolean) => void,
  wanted?: (at: number) => boolean,
): Promise<{ complete: number; total: number }> {
  const handle = await fs.open(filename, fsConstants.O_RDONLY);
  /** Bytes up to the last newline, and whether more follow. */
  let complete = 0;
  let total = 0;
  try {
    const buffer = Buffer.allocUnsafe(4 * 1024 * 1024);
    // Bytes of a line begun in an earlier read, and where it began.
    let carry: Buffer[] = [];
    let carryAt = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, null);
      if (bytesRead === 0) break;
      const lastNewline = buffer.subarray(0, bytesRead).lastIndexOf(10);
      if (lastNewline !== -1) complete = total + lastNewline + 1;
      let start = 0;
      for (;;) {
        const end = buffer.indexOf(10, start);
        if (end === -1 || end >= bytesRead) break;
        if (carry.length > 0) {
          carry.push(buffer.subarray(start, end));
          const bytes = Buffer.concat(carry);
          if (bytes.length > 0 && (wanted === undefined || wanted(carryAt))) take(bytes.toString("utf8"), carryAt, bytes.length, false);
          carry = [];
        } else if (end > start && (wanted === undefined || wanted(total + start))) take(buffer.toString("utf8", start, end), total + start, end - start, false);
        start = end + 1;
      }
      // Copied: the buffer is read into again.
      if (start < bytesRead) {
        if (carry.length === 0) carryAt = total + start;
        carry.push(Buffer.from(buffer.subarray(start, bytesRead)));
      }
      total += bytesRead;
    }
    if (carry.length > 0) {
      const bytes = Buffer.concat(carry);
      if (wanted === undefined || wanted(carryAt)) take(bytes.toString("utf8"), carryAt, bytes.length, true);
    }
  } finally {
    await handle.close();
  }
  return { complete, total };
}

/**
 * Reads a datafile as NeDB's loader does: a missing file is taken from its
 * temp file (a rewrite that crashed before its rename... of a first version)
 * or created empty; corrupt lines are dropped unless there are more than
 * CORRUPT_ALERT_THRESHOLD of them, when loading is refused (the file is left
 * as it is). One difference: an unreadable last line without its newline is an
 * append a crash cut short, and is cut off the file without counting as
 * corrupt, so that the next append starts a line. Documents are not kept:
 * only where each live one's last line is (loadLiveLines reads those).
 */
export async function readDatafile(filename: string): Promise<LoadedDatafile> {
  await ensureDatafile(filename);
  const live = new Map<string, number>();
  const indexes = new Map<string, RawIndex>();
  let lines = 0;
  let corrupt = 0;
  let tornTail = false;
  const take = (line: string, at: number, _len: number, last: boolean): void => {
    lines += 1;
    let doc: PlainObject;
    try {
      doc = parseLine(line) as PlainObject;
      // As NeDB: a null line throws here and counts as corrupt.
      if (doc._id) {
        if (doc.$$deleted === true) live.delete(doc._id as string);
        else live.set(doc._id as string, at);
      } else if (isIndexCreated(doc.$$indexCreated)) indexes.set(doc.$$indexCreated.fieldName, doc.$$indexCreated);
      else if (typeof doc.$$indexRemoved === "string") indexes.delete(doc.$$indexRemoved);
    } catch {
      if (last) {
        lines -= 1;
        tornTail = true;
      } else corrupt += 1;
    }
  };
  const { complete, total } = await scanLines(filename, take);
  if (lines > 0 && corrupt / lines > CORRUPT_ALERT_THRESHOLD) {
    const rate = corrupt / lines;
    throw Object.assign(
      new Error(
        `${filename}: ${Math.floor(100 * rate)}% of the data file is corrupt, more than ${Math.floor(100 * CORRUPT_ALERT_THRESHOLD)}%; ` +
          "refusing to load it, so that nothing is lost by rewriting it",
      ),
      { corruptionRate: rate, corruptItems: corrupt, dataLength: lines },
    );
  }
  // Appends must start on a line of their own: a cut-short last line goes, a
  // whole one without its newline (a file edited by hand) gets one.
  let size = total;
  if (tornTail) {
    await fs.truncate(filename, complete);
    size = complete;
  } else if (complete < total) {
    await fs.appendFile(filename, "\n", "utf8");
    size = total + 1;
  }
  return { live, indexes, lines, corrupt, tornTail, size };
}

/** Calls `take` with each live document (readDatafile's `live`), in file order, with its line's position. */
export async function loadLiveLines(filename: string, live: Map<string, number>, take: (doc: PlainObject, at: number, len: number) => void): Promise<void> {
  const offsets = new Set(live.values());
  await scanLines(filename, (line, at, len) => take(parseLine(line) as PlainObject, at, len), (at) => offsets.has(at));
}

function isIndexCreated(value: unknown): value is RawIndex {
  return typeof value === "object" && value !== null && typeof (value as RawIndex).fieldName === "string";
}

async function exists(file: string): Promise<boolean> {
  try {
    await fs.access(file);
    return true;
  } catch {
    return false;
  }
}

/** NeDB's ensureDatafileIntegrity. */
async function ensureDatafile(filename: string): Promise<void> {
  if (await exists(filename)) return;
  const temp = `${filename}~`;
  if (await exists(temp)) await fs.rename(temp, filename);
  else await fs.writeFile(filename, "", { encoding: "utf8", mode: FILE_MODE });
}

/** fsync of a file or directory (NeDB's flushToStorage). */
async function flush(target: string, isDir: boolean): Promise<void> {
  let handle: fs.FileHandle | undefined;
  try {
    handle = await fs.open(target, isDir ? fsConstants.O_RDONLY : fsConstants.O_RDWR);
    await handle.sync();
  } catch (error) {
    // Some file systems cannot fsync a directory (NeDB ignores it as well).
    if (!isDir) throw error;
  } finally {
    await handle?.close();
  }
}

/** Documents serialised or copied per write of a rewrite (the event loop runs between them). */
const REWRITE_BATCH = 1000;

/**
 * A live document as a rewrite takes it: its line in the current file
 * (`at` ≥ 0: the bytes are copied, not decoded and encoded again), else its
 * decoded document (a line not yet appended). The rewrite sets where the line
 * is in the new file.
 */
export interface SnapshotLine {
  doc: PlainObject | undefined;
  at: number;
  len: number;
  newAt: number;
  newLen: number;
}

/** Lines appended to the old file while a rewrite ran (GroupAppender's captured batches): each line's text and bytes. */
export interface TailLines {
  /** Lines without their newlines. */
  lines: readonly string[];
  /** Each line's UTF-8 bytes, its newline included. */
  bytes: readonly number[];
}

/**
 * Replaces the datafile with these documents and index lines, crash safely:
 * a crash at any point leaves the old file or the new one whole. The lines
 * of `snapshot` are read from the current file with `copy` (which only ever
 * grows by appends meanwhile) or serialised, in batches, so other work goes
 * on meanwhile. Once they are in the temporary file, `finish` is called with
 * `commit`, which writes the given lines after them (those the old file took
 * since the snapshot), syncs and renames, and calls `renamed` at once with
 * the new file's size and where the tail begins (positions move to the new
 * file there, before anything else runs); `finish` must call it once and
 * return its promise.
 */
export async function rewriteDatafile(
  filename: string,
  snapshot: readonly SnapshotLine[],
  copy: (at: number, len: number) => Buffer,
  indexLines: readonly string[],
  finish: (commit: (tail: readonly TailLines[]) => Promise<void>) => Promise<void>,
  renamed: (size: number, tailAt: number, tail: readonly TailLines[]) => void,
): Promise<void> {
  const dir = path.dirname(filename);
  const temp = `${filename}~`;
  await flush(dir, true);
  if (await exists(filename)) await flush(filename, false);
  const handle = await fs.open(temp, "w", FILE_MODE);
  let closed = false;
  let size = 0;
  try {
    for (let i = 0; i < snapshot.length; i += REWRITE_BATCH) {
      const chunks: Buffer[] = [];
      const end = Math.min(snapshot.length, i + REWRITE_BATCH);
      for (let k = i; k < end; ) {
        const line = snapshot[k]!;
        if (line.at < 0) {
          const bytes = Buffer.from(`${serializeDoc(line.doc!)}\n`, "utf8");
          line.newAt = size;
          line.newLen = bytes.length - 1;
          size += bytes.length;
          chunks.push(bytes);
          k += 1;
          continue;
        }
        // Lines next to each other in the old file (most: ids follow the order of inserts) are copied in one read.
        const from = line.at;
        let to = from;
        for (; k < end; k += 1) {
          const next = snapshot[k]!;
          if (next.at !== to) break;
          next.newAt = size + (next.at - from);
          next.newLen = next.len;
          to = next.at + next.len + 1;
        }
        // Copied out of the reader's buffer, which the next read reuses.
        chunks.push(Buffer.from(copy(from, to - from)));
        size += to - from;
      }
      await handle.writeFile(Buffer.concat(chunks));
    }
    if (indexLines.length > 0) {
      const text = indexLines.map((line) => `${line}\n`).join("");
      await handle.writeFile(text, "utf8");
      size += Buffer.byteLength(text, "utf8");
    }
    await finish(async (tail) => {
      const tailAt = size;
      for (const batch of tail) {
        if (batch.lines.length === 0) continue;
        await handle.writeFile(`${batch.lines.join("\n")}\n`, "utf8");
        for (const bytes of batch.bytes) size += bytes;
      }
      await handle.sync();
      closed = true;
      await handle.close();
      await fs.rename(temp, filename);
      renamed(size, tailAt, tail);
      await flush(dir, true);
    });
  } finally {
    if (!closed) await handle.close();
  }
}
