// The embedded store's per-document bookkeeping, off the JS heap as far as it
// can go (issue 20). A document is a slot number; what a slot holds (where
// its datafile line is, its version, its cache flags) sits in typed arrays
// indexed by that number, and its `_id` string and decoded document (while
// cached) in two plain arrays. Finding a document by `_id` or by a unique
// index's key is a probe of an open-addressing table of 32-bit hashes and
// slot numbers (HashSlots); the documents of a key shared by many are a
// sorted list of slot numbers or a bitmap (Posting). Typed arrays are one
// object each, whatever the number of documents: V8's collector neither
// traces nor copies their contents, where a slot object per document, a Map
// entry per `_id` and Sets of slots per index key were about 300,000 objects
// at 100,000 recipients that every mark-compact walked.

import type { PlainObject } from "./checks.js";

/** A stored document: its number in its collection's SlotArrays (reused once removed). */
export type Slot = number;

/** The slot is queued in the cache (counted by its `len`). */
export const IN_CACHE = 1;
/** Read since queued: spared once by eviction. */
export const READ = 2;
/** The cache's queue has an entry for this number (at most one: a removed slot's entry stays, passed over, and serves the number's next document). */
export const QUEUED = 4;
/** Holds a stored document (not free). */
export const LIVE = 8;

/** The state of a collection's slots, by slot number. */
export class SlotArrays {
  /** Each slot's `_id` ("" while free). */
  readonly ids: string[] = [];
  /** The document, decoded: always in a memory-only collection; else while cached or while its line is not in the file. */
  readonly docs: Array<PlainObject | undefined> = [];
  /** Byte offset of the current version's line in the datafile; -1 while that line is not in the file yet. */
  at = new Float64Array(0);
  /** Bytes of that line without its newline (what the cache counts while the slot is queued in it). */
  len = new Uint32Array(0);
  /**
   * Bumped by every replacement and removal, never reset (a reused number
   * goes on counting): which queued or rewritten line is still the current
   * version of the current document.
   */
  version = new Uint32Array(0);
  /** IN_CACHE, READ, QUEUED and LIVE bits. */
  flags = new Uint8Array(0);
  /** Slot numbers in use or freed: the next new number. */
  private used = 0;
  /** Removed slots' numbers, for the next inserts. */
  private readonly free: number[] = [];

  /** Numbers ever used (a bound on slot numbers, for bitmaps). */
  get limit(): number {
    return this.used;
  }

  /** A slot for a new document. */
  allocate(id: string, doc: PlainObject | undefined, at: number, len: number): Slot {
    let slot = this.free.pop();
    if (slot === undefined) {
      slot = this.used;
      this.used += 1;
      if (slot >= this.flags.length) this.grow(Math.max(64, Math.ceil(this.flags.length * 1.5)));
      this.ids.push(id);
      this.docs.push(doc);
    } else {
      this.ids[slot] = id;
      this.docs[slot] = doc;
    }
    this.at[slot] = at;
    this.len[slot] = len;
    this.flags[slot] = (this.flags[slot]! & QUEUED) | LIVE;
    return slot;
  }

  /** Frees a removed document's slot (the caller dropped it from the cache and the indexes). */
  release(slot: Slot): void {
    this.version[slot] = (this.version[slot]! + 1) >>> 0;
    this.flags[slot] = this.flags[slot]! & QUEUED;
    this.ids[slot] = "";
    this.docs[slot] = undefined;
    this.free.push(slot);
  }

  isLive(slot: Slot): boolean {
    return (this.flags[slot]! & LIVE) !== 0;
  }

  private grow(capacity: number): void {
    const at = new Float64Array(capacity);
    at.set(this.at);
    this.at = at;
    const len = new Uint32Array(capacity);
    len.set(this.len);
    this.len = len;
    const version = new Uint32Array(capacity);
    version.set(this.version);
    this.version = version;
    const flags = new Uint8Array(capacity);
    flags.set(this.flags);
    this.flags = flags;
  }
}

const EMPTY = -1;
const DELETED = -2;

/**
 * A multimap of 32-bit hashes to slot numbers, by open addressing (linear
 * probing) in two typed arrays. Several slots may share a hash (two ids or
 * key texts hashing alike): whoever looks one up checks the slots it finds
 * (by id, or by the document's key text).
 */
export class HashSlots {
  private hashes = new Int32Array(16);
  /** EMPTY, DELETED or a slot number. */
  private slots = new Int32Array(16).fill(EMPTY);
  private mask = 15;
  /** Entries holding a slot. */
  size = 0;
  /** Entries holding a slot or DELETED (what makes probes long). */
  private taken = 0;

  add(hash: number, slot: Slot): void {
    if ((this.taken + 1) * 4 > this.slots.length * 3) this.resize();
    let i = hash & this.mask;
    for (;;) {
      const at = this.slots[i]!;
      if (at === EMPTY || at === DELETED) {
        if (at === EMPTY) this.taken += 1;
        this.hashes[i] = hash;
        this.slots[i] = slot;
        this.size += 1;
        return;
      }
      i = (i + 1) & this.mask;
    }
  }

  /** Drops the entry of `slot` under `hash` (none: nothing). */
  delete(hash: number, slot: Slot): void {
    for (let i = this.first(hash); i >= 0; i = this.next(hash, i)) {
      if (this.slots[i] === slot) {
        this.slots[i] = DELETED;
        this.size -= 1;
        // A collection emptied (a capped one trimmed, a tenant erased) gives its room back.
        if (this.slots.length > 64 && this.size * 8 < this.slots.length) this.resize();
        return;
      }
    }
  }

  /** Entries the table has room for (tests). */
  get capacity(): number {
    return this.slots.length;
  }

  /** The slot of a position `first`/`next` answered. */
  slotAt(position: number): Slot {
    return this.slots[position]!;
  }

  /** The position of the first entry holding `hash`, or -1: walk on with `next`. */
  first(hash: number): number {
    return this.seek(hash, hash & this.mask);
  }

  /** The position of the next entry holding `hash` after `position`, or -1. */
  next(hash: number, position: number): number {
    return this.seek(hash, (position + 1) & this.mask);
  }

  /** Slots under `hash` (few). */
  count(hash: number): number {
    let n = 0;
    for (let i = this.first(hash); i >= 0; i = this.next(hash, i)) n += 1;
    return n;
  }

  private seek(hash: number, from: number): number {
    const slots = this.slots;
    const hashes = this.hashes;
    for (let i = from; ; i = (i + 1) & this.mask) {
      const at = slots[i]!;
      if (at === EMPTY) return -1;
      if (at !== DELETED && hashes[i] === hash) return i;
    }
  }

  /** Rehashes into a table sized for the live entries (DELETED ones dropped): at most half full after. */
  private resize(): void {
    let capacity = 16;
    while (capacity < (this.size + 1) * 2) capacity *= 2;
    const oldHashes = this.hashes;
    const oldSlots = this.slots;
    this.hashes = new Int32Array(capacity);
    this.slots = new Int32Array(capacity).fill(EMPTY);
    this.mask = capacity - 1;
    this.size = 0;
    this.taken = 0;
    for (let i = 0; i < oldSlots.length; i += 1) {
      const slot = oldSlots[i]!;
      if (slot >= 0) this.add(oldHashes[i]!, slot);
    }
  }
}

/** Entries a sorted list holds at least before it may turn into a bitmap. */
const MIN_BITMAP_ENTRIES = 256;

/**
 * The slots under one key of a (not unique) index shared by several
 * documents, in ascending slot order: a sorted list, or a bitmap over slot
 * numbers once that is smaller (a key most documents share, e.g. a status or
 * a tenant: 1 bit per slot number instead of 4 bytes per document).
 */
export class Posting {
  private list: Uint32Array | undefined = new Uint32Array(4);
  private bits: Uint32Array | undefined;
  size = 0;

  constructor(a: Slot, b: Slot) {
    this.add(a, 0);
    this.add(b, 0);
  }

  /** Held as a bitmap (tests). */
  get isBitmap(): boolean {
    return this.bits !== undefined;
  }

  /** Adds a slot (`limit`: slot numbers in use, to size a bitmap); false when already there. */
  add(slot: Slot, limit: number): boolean {
    if (this.bits !== undefined) {
      const word = slot >>> 5;
      if (word >= this.bits.length) {
        const bits = new Uint32Array(Math.max(word + 1, Math.ceil(this.bits.length * 1.5)));
        bits.set(this.bits);
        this.bits = bits;
      }
      const bit = 1 << (slot & 31);
      if ((this.bits[word]! & bit) !== 0) return false;
      this.bits[word] = this.bits[word]! | bit;
      this.size += 1;
      return true;
    }
    const list = this.list!;
    const at = this.search(slot);
    if (at < this.size && list[at] === slot) return false;
    if (this.size === list.length) {
      // A bitmap takes limit / 8 bytes, the list 4 per entry.
      if (this.size >= MIN_BITMAP_ENTRIES && this.size * 32 > limit) {
        this.toBits(Math.max(limit, slot + 1));
        return this.add(slot, limit);
      }
      const grown = new Uint32Array(list.length * 2);
      grown.set(list);
      this.list = grown;
    }
    const target = this.list!;
    target.copyWithin(at + 1, at, this.size);
    target[at] = slot;
    this.size += 1;
    return true;
  }

  delete(slot: Slot): void {
    if (this.bits !== undefined) {
      const word = slot >>> 5;
      const bit = 1 << (slot & 31);
      if (word >= this.bits.length || (this.bits[word]! & bit) === 0) return;
      this.bits[word] = this.bits[word]! & ~bit;
      this.size -= 1;
      // Back to a list once that is a quarter of the bitmap's size (not at once: a key hovering at the line would convert back and forth).
      if (this.size * 128 < this.bits.length * 32 && this.size < MIN_BITMAP_ENTRIES * 4) this.toList();
      return;
    }
    const list = this.list!;
    const at = this.search(slot);
    if (at >= this.size || list[at] !== slot) return;
    list.copyWithin(at, at + 1, this.size);
    this.size -= 1;
  }

  /** The only slot left (size 1). */
  only(): Slot {
    for (const slot of this.slots()) return slot;
    throw new Error("an empty posting");
  }

  *slots(): Generator<Slot> {
    if (this.bits === undefined) {
      const list = this.list!;
      for (let i = 0; i < this.size; i += 1) yield list[i]!;
      return;
    }
    const bits = this.bits;
    for (let w = 0; w < bits.length; w += 1) {
      let word = bits[w]!;
      while (word !== 0) {
        const low = word & -word;
        yield (w << 5) + 31 - Math.clz32(low);
        word ^= low;
      }
    }
  }

  /** First position whose slot is >= `slot` (the list). */
  private search(slot: Slot): number {
    const list = this.list!;
    let lo = 0;
    let hi = this.size;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (list[mid]! < slot) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  private toBits(limit: number): void {
    const bits = new Uint32Array((limit + 31) >>> 5);
    const list = this.list!;
    for (let i = 0; i < this.size; i += 1) {
      const slot = list[i]!;
      bits[slot >>> 5] = bits[slot >>> 5]! | (1 << (slot & 31));
    }
    this.bits = bits;
    this.list = undefined;
  }

  private toList(): void {
    const list = new Uint32Array(Math.max(4, this.size * 2));
    let n = 0;
    for (const slot of this.slots()) list[n++] = slot;
    this.list = list;
    this.bits = undefined;
  }
}
