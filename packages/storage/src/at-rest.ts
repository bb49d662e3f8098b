// Documents at rest in the datafile (issue 20: memory grows with what is in
// flight, not with what was sent). The datafile already holds every document,
// one line each, so a collection on disk keeps in memory only what finds a
// document (its slot: `_id`, the line's position, index entries) and a bounded
// cache of decoded documents, those read or written lately. A document read
// that is not cached is a positional read of its line and a parse. A document
// whose line is not yet in the file (queued for the group appender) stays in
// memory until the append holding it is done; then it becomes a cache entry
// like any other, so a write followed by a read of the same document (an
// email's send, then its settle) reads it from memory.
//
// The cache is a CLOCK (second chance) over the slots: reading a cached
// document only sets a flag, and eviction walks a queue, sparing once each
// slot read since it was queued. One cache serves every embedded store of a
// thread (a budget for the thread, not per collection), unless a store is
// opened with its own budget (tests).

import { closeSync, openSync, readSync } from "node:fs";
import type { PlainObject } from "./checks.js";
import { parseLine } from "./datafile.js";

/** A stored document; indexes hold the slot, so replacing its document touches only the entries whose key changed. */
export interface Slot {
  readonly id: string;
  /** The document, decoded: always in a memory-only collection; else while cached or while its line is not in the file. */
  doc: PlainObject | undefined;
  /** Byte offset of the current version's line in the datafile; -1 while that line is not in the file yet. */
  at: number;
  /** Bytes of that line without its newline (what the cache counts while the slot is queued in it). */
  len: number;
  /** Bumped by every replacement, -1 once removed: which queued or rewritten line is still the current version. */
  version: number;
  /** IN_CACHE and READ bits. */
  flags: number;
}

/** The slot is queued in the cache (counted by its `len`). */
export const IN_CACHE = 1;
/** Read since queued: spared once by eviction. */
export const READ = 2;

/** Default cache budget of a thread's embedded stores, in MB of datafile lines (EMBEDDED_CACHE_MB). */
export const DEFAULT_CACHE_MB = 8;

/** The cache budget from EMBEDDED_CACHE_MB (MB of document lines, 0 for none), else the default. */
export function cacheBytesFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.EMBEDDED_CACHE_MB;
  if (raw === undefined || raw === "") return DEFAULT_CACHE_MB * 1024 * 1024;
  const mb = Number(raw);
  if (!/^\d+(\.\d+)?$/.test(raw) || !Number.isFinite(mb)) throw new TypeError(`EMBEDDED_CACHE_MB must be a number of MB (0 or more), got ${JSON.stringify(raw)}`);
  return Math.floor(mb * 1024 * 1024);
}

/** Decoded documents of slots whose line is in the file, at most `budget` bytes of lines. */
export class DocCache {
  /** The CLOCK's queue: slots from `head` on (a slot appears once, while IN_CACHE). */
  private queue: Slot[] = [];
  private head = 0;
  /** Bytes of lines of the slots queued. */
  bytes = 0;
  /** Queue entries of slots forgotten since queued (passed over; dropped from the queue once they are many). */
  private stale = 0;

  constructor(readonly budget: number) {}

  /** Slots queued (tests). */
  get entries(): number {
    return this.queue.length - this.head;
  }

  /** Takes a slot whose decoded document is set and whose line is in the file; evicts past the budget. */
  admit(slot: Slot): void {
    if ((slot.flags & IN_CACHE) === 0) {
      slot.flags |= IN_CACHE;
      this.queue.push(slot);
      this.bytes += slot.len;
    }
    if (this.bytes > this.budget) this.evict();
  }

  /**
   * A removed slot: its document goes now, not when the CLOCK reaches it (a
   * collection trimmed to a cap would otherwise fill the cache with what it
   * deleted). Its queue entry stays, passed over.
   */
  forget(slot: Slot): void {
    if ((slot.flags & IN_CACHE) !== 0) {
      this.bytes -= slot.len;
      this.stale += 1;
    }
    slot.flags &= ~(IN_CACHE | READ);
    slot.doc = undefined;
    // The queue holds the slot itself: without eviction (a cache under its budget) it would keep every removed one.
    if (this.stale > 1024 && this.stale * 2 > this.queue.length - this.head) {
      this.queue = this.queue.slice(this.head).filter((queued) => (queued.flags & IN_CACHE) !== 0);
      this.head = 0;
      this.stale = 0;
    }
  }

  /** A queued slot's line changed length (a new version written): counts the difference. */
  resize(slot: Slot, len: number): void {
    if ((slot.flags & IN_CACHE) !== 0) this.bytes += len - slot.len;
    slot.len = len;
  }

  private evict(): void {
    const queue = this.queue;
    while (this.bytes > this.budget && this.head < queue.length) {
      const slot = queue[this.head]!;
      queue[this.head] = undefined as unknown as Slot;
      this.head += 1;
      // Forgotten (removed) since it was queued.
      if ((slot.flags & IN_CACHE) === 0) {
        this.stale -= 1;
        continue;
      }
      // Read since queued, and still on disk and stored: once more round.
      if ((slot.flags & READ) !== 0 && slot.at >= 0 && slot.version >= 0 && this.budget > 0) {
        slot.flags &= ~READ;
        queue.push(slot);
        continue;
      }
      slot.flags &= ~(IN_CACHE | READ);
      this.bytes -= slot.len;
      // A document whose current line is not in the file yet stays: the append's end queues it again.
      if (slot.at >= 0) slot.doc = undefined;
    }
    if (this.head > 1024 && this.head * 2 > queue.length) {
      this.queue = queue.slice(this.head);
      this.head = 0;
    }
  }
}

/** The cache of a thread's stores opened without a budget of their own. */
let threadCache: DocCache | undefined;

export function sharedCache(): DocCache {
  threadCache ??= new DocCache(cacheBytesFromEnv());
  return threadCache;
}

/** Positional reads of a datafile's lines, through a descriptor kept open (reopened when a rewrite renames a new file over it). */
export class LineReader {
  private fd: number | undefined;
  private buffer = Buffer.allocUnsafe(64 * 1024);
  /** Documents read (tests). */
  reads = 0;

  constructor(private readonly filename: string) {}

  /** Opens the file as it is now under its name (after load, and after each rewrite's rename). */
  reopen(): void {
    this.close();
    this.fd = openSync(this.filename, "r");
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }

  /** The bytes at [at, at + len): a view of a buffer reused by the next read. */
  bytes(at: number, len: number): Buffer {
    if (this.fd === undefined) this.reopen();
    if (this.buffer.length < len) this.buffer = Buffer.allocUnsafe(Math.max(len, this.buffer.length * 2));
    let done = 0;
    while (done < len) {
      const n = readSync(this.fd!, this.buffer, done, len - done, at + done);
      if (n === 0) throw new Error(`${this.filename}: a document's line at ${at} is past the end of the file`);
      done += n;
    }
    return this.buffer.subarray(0, len);
  }

  /** The document whose line is at `at`. */
  read(at: number, len: number): PlainObject {
    this.reads += 1;
    return parseLine(this.bytes(at, len).toString("utf8")) as PlainObject;
  }
}
