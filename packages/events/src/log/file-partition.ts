// One partition of the durable in-process bus: an append-only log in segment
// files, as Kafka keeps one.
//
//   <partition dir>/00000000000000000000.log   records from offset 0
//   <partition dir>/00000000000000052113.log   records from offset 52113 (the active segment)
//
// Appends go to the last segment; once it holds `segmentBytes` the next write
// starts a new one, and retention may close it earlier (rollIf: every group
// has handled it, or it has grown old). Retention deletes whole segments from
// the head, never the active one. In memory it keeps the byte position of each record (to
// find an offset), a write handle and the newest records (below); events are read back from the files
// (the OS page cache keeps that cheap), except the newest ones: the last
// TAIL_BYTES of records written stay decoded in memory, so that a group keeping
// up (every consumer of a running campaign) reads what was just written
// without reading it back from the file, checking and decoding it again for
// each group.
//
// Writes: every `publish` encodes its events at once (copying the caller's
// bytes) and queues them; one writer per partition writes everything queued as
// one `write`, then resolves those publishes: concurrent publishes share a
// write (and, with fsync "always", one fsync). Consumers see a record only
// once it is written, so a group never commits past what a restart finds.

import { open, readdir, readFile, rm, type FileHandle } from "node:fs/promises";
import * as path from "node:path";
import type { BusLogEntry } from "../shared.js";
import type { OutgoingEvent } from "../types.js";
import { AppendWaiters, type LoggedEvent, type Partition } from "./partition.js";
import { checkRecord, decodeRecords, encodeRecord, recordTime, recordView, seal } from "./record.js";

/** When `publish` resolves: after the write to the OS ("interval", fsync every `fsyncIntervalMs`), or after fsync ("always"). */
export type FsyncPolicy = "interval" | "always";

export interface FilePartitionOptions {
  dir: string;
  topic: string;
  partition: number;
  /** A segment is closed, and a new one started, once it holds this many bytes. */
  segmentBytes: number;
  fsync: FsyncPolicy;
  /** Called after a new segment was started (a closed segment may now be deletable). */
  onRoll: () => void;
  warn: (message: string, fields: BusLogEntry["fields"]) => void;
}

interface Segment {
  /** Offset of its first record (also its file name). */
  base: number;
  file: string;
  /** Byte position of each record in the file: record `base + i` starts at `positions[i]`. */
  positions: number[];
  /** Bytes of whole records written (the file may hold no more). */
  size: number;
  /** Publish time (ms) of its first and its last record; 0 while it has none. */
  firstAt: number;
  lastAt: number;
  /** Opened on the first read. */
  reader: Promise<FileHandle> | undefined;
  /** Reads in flight: a deleted segment's reader is closed once they are done. */
  reads: number;
  deleted: boolean;
}

interface Pending {
  records: Buffer[];
  /** Each record's event as the tail keeps it (recordView), its offset set once written. */
  views: LoggedEvent[];
  bytes: number;
  settle: { resolve: () => void; reject: (error: unknown) => void }[];
}

const SEGMENT_NAME = /^(\d{20})\.log$/;
/** Most bytes one consumer read takes from a segment (at least one record). */
const MAX_READ_BYTES = 1024 * 1024;
/** Bytes of the newest records kept decoded per partition (whole write batches; at least the last one). */
const TAIL_BYTES = 256 * 1024;

/** One write batch's events, decoded, in the tail. */
interface TailBatch {
  first: number;
  events: LoggedEvent[];
  bytes: number;
}

export class FilePartition implements Partition {
  private pending: Pending = { records: [], views: [], bytes: 0, settle: [] };
  private writing: Promise<void> | undefined;
  /** Written since the last fsync. */
  private unsynced = false;
  /** Set when a failed write could not be undone: the partition refuses writes from then on. */
  private broken: Error | undefined;
  private closed = false;
  private closing: Promise<void> | undefined;
  private readonly waiters = new AppendWaiters();
  /** Serialises what uses the write handle (batches, rolls, syncs, close): a roll replaces it. */
  private writerLock: Promise<void> = Promise.resolve();
  /** The newest write batches, oldest first (see TAIL_BYTES); consecutive offsets up to `end`. */
  private tail: TailBatch[] = [];
  private tailBytes = 0;

  private constructor(
    private readonly options: FilePartitionOptions,
    /** Ascending by base; the last one is active. Never empty. */
    private readonly segments: Segment[],
    private writer: FileHandle,
  ) {}

  /** Creates the partition directory's first segment. */
  static async create(options: FilePartitionOptions): Promise<void> {
    const handle = await open(path.join(options.dir, segmentName(0)), "a");
    await handle.close();
  }

  /**
   * Opens a partition directory, checking every record of every segment. A
   * torn or damaged record ends the log: the file is cut there and later
   * segments are deleted (as Kafka recovers a log), with a warning. A killed
   * writer leaves at most its last write torn.
   */
  static async open(options: FilePartitionOptions): Promise<FilePartition> {
    const names = (await readdir(options.dir)).filter((name) => SEGMENT_NAME.test(name)).sort();
    const segments: Segment[] = [];
    for (let i = 0; i < names.length; i++) {
      const file = path.join(options.dir, names[i]!);
      const base = Number(SEGMENT_NAME.exec(names[i]!)![1]);
      const previous = segments[segments.length - 1];
      const expected = previous ? previous.base + previous.positions.length : base;
      if (base !== expected) {
        await dropSegments(options, names.slice(i), `segment starts at offset ${base}, expected ${expected}`);
        break;
      }
      const data = await readFile(file);
      const positions: number[] = [];
      let at = 0;
      for (let offset = base; at < data.length; offset++) {
        const length = checkRecord(data, at, offset);
        if (length === undefined) break;
        positions.push(at);
        at += length;
      }
      const firstAt = positions.length > 0 ? recordTime(data, positions[0]!) : 0;
      const lastAt = positions.length > 0 ? recordTime(data, positions[positions.length - 1]!) : 0;
      segments.push({ base, file, positions, size: at, firstAt, lastAt, reader: undefined, reads: 0, deleted: false });
      if (at < data.length) {
        options.warn("dropped a torn or damaged record at the end of the log (a write cut off by a crash)", {
          topic: options.topic,
          partition: options.partition,
          offset: base + positions.length,
          bytes_dropped: data.length - at,
        });
        const handle = await open(file, "r+");
        try {
          await handle.truncate(at);
          await handle.datasync();
        } finally {
          await handle.close();
        }
        await dropSegments(options, names.slice(i + 1), "they follow a damaged record");
        break;
      }
    }
    if (segments.length === 0) {
      await FilePartition.create(options);
      segments.push({ base: 0, file: path.join(options.dir, segmentName(0)), positions: [], size: 0, firstAt: 0, lastAt: 0, reader: undefined, reads: 0, deleted: false });
    }
    const writer = await open(segments[segments.length - 1]!.file, "a");
    return new FilePartition(options, segments, writer);
  }

  get start(): number {
    return this.segments[0]!.base;
  }

  get end(): number {
    const active = this.active;
    return active.base + active.positions.length;
  }

  /** Bytes of all segments. */
  get bytes(): number {
    return this.segments.reduce((sum, segment) => sum + segment.size, 0);
  }

  private get active(): Segment {
    return this.segments[this.segments.length - 1]!;
  }

  append(events: OutgoingEvent[]): Promise<void> {
    if (this.broken) return Promise.reject(this.broken);
    if (this.closed) return Promise.reject(new Error("the event bus is closed"));
    const now = Date.now();
    for (const event of events) {
      const record = encodeRecord(event, now);
      this.pending.records.push(record);
      this.pending.views.push(recordView(event, record));
      this.pending.bytes += record.length;
    }
    const written = new Promise<void>((resolve, reject) => this.pending.settle.push({ resolve, reject }));
    this.writing ??= this.writeLoop();
    return written;
  }

  /** Writes what is queued, batch after batch, until nothing is left. */
  private async writeLoop(): Promise<void> {
    // Let the publishes of this turn of the event loop join the first batch.
    await Promise.resolve();
    for (;;) {
      const batch = this.pending;
      if (batch.records.length === 0) {
        this.writing = undefined;
        return;
      }
      this.pending = { records: [], views: [], bytes: 0, settle: [] };
      try {
        if (this.broken) throw this.broken;
        await this.withWriter(() => this.write(batch));
        batch.settle.forEach((s) => s.resolve());
        this.waiters.wake();
      } catch (error) {
        batch.settle.forEach((s) => s.reject(error));
      }
    }
  }

  private withWriter<T>(use: () => Promise<T>): Promise<T> {
    const run = this.writerLock.then(use);
    this.writerLock = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  private async write(batch: Pending): Promise<void> {
    if (this.active.size >= this.options.segmentBytes && this.active.positions.length > 0) await this.roll();
    const segment = this.active;
    let offset = segment.base + segment.positions.length;
    let at = segment.size;
    const positions: number[] = [];
    for (const record of batch.records) {
      seal(record, offset++);
      positions.push(at);
      at += record.length;
    }
    const data = batch.records.length === 1 ? batch.records[0]! : Buffer.concat(batch.records, batch.bytes);
    try {
      await writeAll(this.writer, data);
      if (this.options.fsync === "always") await this.writer.datasync();
    } catch (error) {
      await this.undo(segment, error);
      throw error;
    }
    if (segment.positions.length === 0) segment.firstAt = recordTime(batch.records[0]!, 0);
    segment.lastAt = recordTime(batch.records[batch.records.length - 1]!, 0);
    for (const position of positions) segment.positions.push(position);
    segment.size = at;
    if (this.options.fsync !== "always") this.unsynced = true;
    const first = offset - batch.records.length;
    batch.views.forEach((view, i) => (view.offset = first + i));
    this.remember(batch.views, first, data.length);
  }

  /** Keeps a written batch's events in the tail (as they were published: nothing to decode), dropping the oldest batches past TAIL_BYTES. */
  private remember(events: LoggedEvent[], first: number, bytes: number): void {
    this.tail.push({ first, events, bytes });
    this.tailBytes += bytes;
    while (this.tail.length > 1 && this.tailBytes > TAIL_BYTES) this.tailBytes -= this.tail.shift()!.bytes;
  }

  /** Up to `max` events from `from` on out of the tail, or undefined when `from` is older than it. */
  private fromTail(from: number, max: number): LoggedEvent[] | undefined {
    const oldest = this.tail[0];
    if (oldest === undefined || from < oldest.first) return undefined;
    let i = this.tail.length - 1;
    while (this.tail[i]!.first > from) i--;
    const events: LoggedEvent[] = [];
    for (let at = from - this.tail[i]!.first; i < this.tail.length && events.length < max; i++, at = 0) {
      const batch = this.tail[i]!.events;
      for (; at < batch.length && events.length < max; at++) events.push(batch[at]!);
    }
    return events;
  }

  /**
   * Cuts a partly written batch off again (disk full, I/O error), so that the
   * file holds whole records only. If even that fails, nothing more is written.
   */
  private async undo(segment: Segment, cause: unknown): Promise<void> {
    try {
      await this.writer.truncate(segment.size);
    } catch {
      this.broken = new Error(
        `partition ${this.options.partition} of ${this.options.topic} is unusable after a failed write: ${cause instanceof Error ? cause.message : String(cause)}`,
      );
    }
  }

  /** Closes the active segment and starts the next one. */
  private async roll(): Promise<void> {
    const next = this.end;
    if (this.unsynced) await this.writer.datasync();
    this.unsynced = false;
    const file = path.join(this.options.dir, segmentName(next));
    const writer = await open(file, "a");
    // The new file's directory entry, so that a power loss does not lose the segment.
    await syncDir(this.options.dir);
    await this.writer.close();
    this.writer = writer;
    this.segments.push({ base: next, file, positions: [], size: 0, firstAt: 0, lastAt: 0, reader: undefined, reads: 0, deleted: false });
    this.options.onRoll();
  }

  /**
   * Closes the active segment, if it holds events and `decide` says so given
   * it as it is once no write is in progress, so that retention can delete it
   * like any closed one. Answers whether it did.
   */
  rollIf(decide: (active: { end: number; firstAt: number; lastAt: number }) => boolean): Promise<boolean> {
    return this.withWriter(async () => {
      const active = this.active;
      if (this.closed || this.broken || active.positions.length === 0) return false;
      if (!decide({ end: this.end, firstAt: active.firstAt, lastAt: active.lastAt })) return false;
      await this.roll();
      return true;
    });
  }

  async read(from: number, max: number): Promise<LoggedEvent[]> {
    const segment = this.segmentOf(from);
    if (!segment) return [];
    const recent = this.fromTail(from, max);
    if (recent !== undefined) return recent;
    const first = from - segment.base;
    let count = Math.min(max, segment.positions.length - first);
    const startAt = segment.positions[first]!;
    const endOf = (n: number) => (first + n < segment.positions.length ? segment.positions[first + n]! : segment.size);
    while (count > 1 && endOf(count) - startAt > MAX_READ_BYTES) count = Math.ceil(count / 2);
    const data = Buffer.allocUnsafe(endOf(count) - startAt);
    segment.reads++;
    try {
      segment.reader ??= open(segment.file, "r");
      const reader = await segment.reader.catch((error: unknown) => {
        segment.reader = undefined; // the next read tries again
        throw error;
      });
      await readAll(reader, data, startAt);
    } finally {
      segment.reads--;
      if (segment.deleted && segment.reads === 0) void closeReader(segment);
    }
    return decodeRecords(data, from);
  }

  nextAppend(signal: AbortSignal): Promise<void> {
    return this.waiters.wait(signal);
  }

  /** The segment holding `offset`, if it is still retained. */
  private segmentOf(offset: number): Segment | undefined {
    let low = 0;
    let high = this.segments.length - 1;
    while (low < high) {
      const middle = (low + high + 1) >> 1;
      if (this.segments[middle]!.base <= offset) low = middle;
      else high = middle - 1;
    }
    const segment = this.segments[low]!;
    return offset >= segment.base && offset < segment.base + segment.positions.length ? segment : undefined;
  }

  /**
   * Deletes closed segments from the head while `drop(segment end offset,
   * segment bytes, bytes retained, publish time of its last event)` says so.
   * Returns the new start.
   */
  async trimHead(drop: (segmentEnd: number, bytes: number, retainedBytes: number, lastAt: number) => boolean): Promise<number> {
    let retained = this.bytes;
    while (this.segments.length > 1) {
      const head = this.segments[0]!;
      const headEnd = head.base + head.positions.length;
      if (!drop(headEnd, head.size, retained, head.lastAt)) break;
      this.segments.shift();
      retained -= head.size;
      head.deleted = true;
      await rm(head.file, { force: true });
      if (head.reads === 0) await closeReader(head);
    }
    return this.start;
  }

  /** fsyncs what was written since the last call (the periodic sync of fsync "interval"). */
  sync(): Promise<void> {
    return this.withWriter(async () => {
      if (!this.unsynced || this.closed) return;
      this.unsynced = false;
      await this.writer.datasync();
    });
  }

  /** Waits for queued writes, syncs, and closes every file. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      while (this.writing) await this.writing;
      await this.sync();
      await this.withWriter(async () => {
        this.closed = true;
        await this.writer.close();
      });
      await Promise.all(this.segments.map(closeReader));
    })();
    return this.closing;
  }
}

export function segmentName(base: number): string {
  return `${String(base).padStart(20, "0")}.log`;
}

async function dropSegments(options: FilePartitionOptions, names: string[], why: string): Promise<void> {
  if (names.length === 0) return;
  options.warn(`deleted ${names.length} segment file(s) of the log: ${why}`, {
    topic: options.topic,
    partition: options.partition,
    segments: names.join(","),
  });
  for (const name of names) await rm(path.join(options.dir, name), { force: true });
}

async function closeReader(segment: Segment): Promise<void> {
  const reader = segment.reader;
  segment.reader = undefined;
  if (reader) await (await reader.catch(() => undefined))?.close().catch(() => undefined);
}

async function writeAll(handle: FileHandle, data: Buffer): Promise<void> {
  let written = 0;
  while (written < data.length) {
    // Append mode: the position argument is ignored, every write goes to the end.
    const { bytesWritten } = await handle.write(data, written, data.length - written, null);
    written += bytesWritten;
  }
}

async function readAll(handle: FileHandle, into: Buffer, position: number): Promise<void> {
  let read = 0;
  while (read < into.length) {
    const { bytesRead } = await handle.read(into, read, into.length - read, position + read);
    if (bytesRead === 0) throw new Error(`segment file ended before position ${position + into.length}`);
    read += bytesRead;
  }
}

/** fsyncs a directory, so that files created or renamed in it survive a power loss. */
export async function syncDir(dir: string): Promise<void> {
  const handle = await open(dir, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
