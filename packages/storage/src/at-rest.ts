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
import { IN_CACHE, QUEUED, READ, type Slot, type SlotArrays } from "./slots.js";

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
  /** The CLOCK's queue from `head` on: a slot of `owners[i]` numbered `numbers[i]` (a number appears once per owner, while QUEUED). */
  private owners: SlotArrays[] = [];
  private numbers: number[] = [];
  private head = 0;
  /** Bytes of lines of the slots queued. */
  bytes = 0;
  /** Queue entries of slots forgotten since queued (passed over; dropped from the queue once they are many). */
  private stale = 0;

  constructor(readonly budget: number) {}

  /** Slots queued (tests). */
  get entries(): number {
    return this.numbers.length - this.head - this.stale;
  }

  /** Takes a slot whose decoded document is set and whose line is in the file; evicts past the budget. */
  admit(owner: SlotArrays, slot: Slot): void {
    const flags = owner.flags[slot]!;
    if ((flags & IN_CACHE) === 0) {
      owner.flags[slot] = flags | IN_CACHE | QUEUED;
      this.bytes += owner.len[slot]!;
      // A removed document's entry still queued serves the number's new one.
      if ((flags & QUEUED) !== 0) this.stale -= 1;
      else {
        this.owners.push(owner);
        this.numbers.push(slot);
      }
    }
    if (this.bytes > this.budget) this.evict();
  }

  /**
   * A removed slot: its document goes now, not when the CLOCK reaches it (a
   * collection trimmed to a cap would otherwise fill the cache with what it
   * deleted). Its queue entry stays, passed over.
   */
  forget(owner: SlotArrays, slot: Slot): void {
    const flags = owner.flags[slot]!;
    if ((flags & IN_CACHE) !== 0) {
      this.bytes -= owner.len[slot]!;
      this.stale += 1;
    }
    owner.flags[slot] = flags & ~(IN_CACHE | READ);
    owner.docs[slot] = undefined;
    // Without eviction (a cache under its budget) the queue would keep an entry for every removed one.
    if (this.stale > 1024 && this.stale * 2 > this.numbers.length - this.head) {
      const owners: SlotArrays[] = [];
      const numbers: number[] = [];
      for (let i = this.head; i < this.numbers.length; i += 1) {
        const from = this.owners[i]!;
        const at = this.numbers[i]!;
        if ((from.flags[at]! & IN_CACHE) !== 0) {
          owners.push(from);
          numbers.push(at);
        } else from.flags[at] = from.flags[at]! & ~QUEUED;
      }
      this.owners = owners;
      this.numbers = numbers;
      this.head = 0;
      this.stale = 0;
    }
  }

  /** A slot's line changed length (a new version written): counts the difference while it is queued. */
  resize(owner: SlotArrays, slot: Slot, len: number): void {
    if ((owner.flags[slot]! & IN_CACHE) !== 0) this.bytes += len - owner.len[slot]!;
    owner.len[slot] = len;
  }

  private evict(): void {
    const owners = this.owners;
    const numbers = this.numbers;
    while (this.bytes > this.budget && this.head < numbers.length) {
      const owner = owners[this.head]!;
      const slot = numbers[this.head]!;
      owners[this.head] = undefined as unknown as SlotArrays;
      this.head += 1;
      const flags = owner.flags[slot]!;
      // Forgotten (removed) since it was queued.
      if ((flags & IN_CACHE) === 0) {
        owner.flags[slot] = flags & ~QUEUED;
        this.stale -= 1;
        continue;
      }
      // Read since queued, and still on disk: once more round.
      if ((flags & READ) !== 0 && owner.at[slot]! >= 0 && this.budget > 0) {
        owner.flags[slot] = flags & ~READ;
        owners.push(owner);
        numbers.push(slot);
        continue;
      }
      owner.flags[slot] = flags & ~(IN_CACHE | READ | QUEUED);
      this.bytes -= owner.len[slot]!;
      // A document whose current line is not in the file yet stays: the append's end queues it again.
      if (owner.at[slot]! >= 0) owner.docs[slot] = undefined;
    }
    if (this.head > 1024 && this.head * 2 > numbers.length) {
      this.owners = owners.slice(this.head);
      this.numbers = numbers.slice(this.head);
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

/** Bytes read at once when a read comes near the last one (see LineReader). */
export const READ_AHEAD_BYTES = 64 * 1024;
/** How near (in bytes of the file) a read must come to the last one to read ahead. */
const NEAR_BYTES = 256 * 1024;

/**
 * Positional reads of a datafile's lines, through a descriptor kept open
 * (reopened when a rewrite renames a new file over it). A read near the last
 * one reads READ_AHEAD_BYTES, and the reads that fall within them are served
 * from memory: documents are mostly read in runs of neighbouring lines (an
 * audience's pages in id order, a batch's recipients or ledger rows, a
 * count), one system call for a few hundred lines instead of one each
 * (bench/README.md, "Embedded store: reads in runs"). Only bytes the
 * appender has finished writing (`written`) are read ahead: the file only
 * grows until a rewrite replaces it (reopen), so they never change under the
 * buffer.
 */
export class LineReader {
  private fd: number | undefined;
  /** The last bytes read: the file's [bufferAt, bufferAt + held). */
  private buffer = Buffer.allocUnsafe(READ_AHEAD_BYTES);
  private bufferAt = 0;
  private held = 0;
  /** Where the last read from the file began (-∞ before the first: no read ahead). */
  private lastAt = Number.NEGATIVE_INFINITY;
  /** Documents read (tests). */
  reads = 0;
  /** Reads from the file (tests). */
  fileReads = 0;

  constructor(
    private readonly filename: string,
    /** The file's bytes known to be whole (the appender's size): never read ahead past them. */
    private readonly written: () => number,
    /** Bytes read at once near the last read (0: each line alone). */
    private readonly readAhead: number,
  ) {}

  /** Opens the file as it is now under its name (after load, and after each rewrite's rename). */
  reopen(): void {
    this.close();
    this.fd = openSync(this.filename, "r");
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
    this.held = 0;
    this.lastAt = Number.NEGATIVE_INFINITY;
  }

  /** The bytes at [at, at + len): a view of a buffer reused by the next read. */
  bytes(at: number, len: number): Buffer {
    const from = at - this.bufferAt;
    if (from >= 0 && from + len <= this.held) return this.buffer.subarray(from, from + len);
    if (this.fd === undefined) this.reopen();
    if (this.buffer.length < len) this.buffer = Buffer.allocUnsafe(Math.max(len, this.buffer.length * 2));
    const near = Math.abs(at - this.lastAt) < NEAR_BYTES;
    this.lastAt = at;
    const upTo = near ? Math.max(len, Math.min(this.readAhead, this.buffer.length, this.written() - at)) : len;
    this.held = 0;
    let done = 0;
    while (done < len) {
      this.fileReads += 1;
      const n = readSync(this.fd!, this.buffer, done, upTo - done, at + done);
      if (n === 0) throw new Error(`${this.filename}: a document's line at ${at} is past the end of the file`);
      done += n;
    }
    this.bufferAt = at;
    this.held = done;
    return this.buffer.subarray(0, len);
  }

  /** The document whose line is at `at`. */
  read(at: number, len: number): PlainObject {
    this.reads += 1;
    return parseLine(this.bytes(at, len).toString("utf8")) as PlainObject;
  }
}
