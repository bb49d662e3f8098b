// The embedded store's engine: one collection's documents, with an ordered
// view by `_id` and hash indexes in memory, all changed synchronously. On
// disk, a document at rest is only its slot here (where its datafile line is)
// and is read back when needed, through a bounded cache (at-rest.ts). It
// replaces NeDB's Datastore, whose index trees cost every write a remove and
// re-insert in each index (compared value by value with compareThings) even
// when no indexed field changed, whose every operation went through an async
// executor, and which deep-copied each document on the way in and out.
// Matching, sorting and updating stay NeDB's (its pure functions in
// @seald-io/nedb/lib/model.js, used by embedded.ts and below), so queries
// answer exactly as before; only the way documents are kept and found is ours.
//
// Documents kept here are never changed in place: an update stores a new
// object (NeDB's modify copies), so a document handed to a reader or to the
// datafile writer stays as it was, and stored documents may share parts.
//
// Reads of documents: `doc` (cached: the document is about to be used, e.g.
// updated), `peek` (not cached: a scan matching many documents it will not
// keep). Matches found by a query are cached; the documents a scan passes
// over are not, so a scan does not push out what a write will read next.

/// <reference path="./nedb-model.d.ts" />
import { compareThings, getDotValue, match } from "@seald-io/nedb/lib/model.js";
import type { DocCache, LineReader } from "./at-rest.js";
import { isPlainObject, type PlainObject } from "./checks.js";
import { ownPathValue, reachesInherited } from "./own-path.js";
import { HashSlots, Posting, READ, SlotArrays, type Slot } from "./slots.js";
import { DuplicateKeyError, type AnyFilter, type SortSpec } from "./types.js";

export type { Slot } from "./slots.js";

// ---------------------------------------------------------------------------
// The ordered view by `_id`: sorted chunks of slots. Our ids are time-sortable,
// so an insert is nearly always an append to the last chunk; one out of order
// (or a delete) shifts at most one chunk (≤ 2 × CHUNK entries), and a page
// after a cursor starts with two binary searches.
// ---------------------------------------------------------------------------

const CHUNK = 512;

/** Where to start or stop an `_id` walk; `inclusive` for $gte/$lte. */
export interface IdBound {
  id: string;
  inclusive: boolean;
}

export class OrderedSlots {
  /** Slot numbers (small integers: an array of them holds no pointers). */
  private chunks: Slot[][] = [];

  constructor(private readonly ids: readonly string[]) {}

  /** First position whose id is > `id` (`strict`) or >= `id`; [chunks.length, 0] past the end. */
  private seek(id: string, strict: boolean): [number, number] {
    const chunks = this.chunks;
    let lo = 0;
    let hi = chunks.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const chunk = chunks[mid]!;
      const last = this.ids[chunk[chunk.length - 1]!]!;
      if (strict ? last <= id : last < id) lo = mid + 1;
      else hi = mid;
    }
    if (lo === chunks.length) return [lo, 0];
    const chunk = chunks[lo]!;
    let a = 0;
    let b = chunk.length;
    while (a < b) {
      const mid = (a + b) >>> 1;
      const at = this.ids[chunk[mid]!]!;
      if (strict ? at <= id : at < id) a = mid + 1;
      else b = mid;
    }
    return [lo, a];
  }

  insert(slot: Slot): void {
    const chunks = this.chunks;
    const id = this.ids[slot]!;
    const last = chunks[chunks.length - 1];
    if (last === undefined || this.ids[last[last.length - 1]!]! < id) {
      if (last === undefined || last.length >= CHUNK) chunks.push([slot]);
      else last.push(slot);
      return;
    }
    const [c, i] = this.seek(id, false);
    const chunk = chunks[c]!;
    chunk.splice(i, 0, slot);
    if (chunk.length > 2 * CHUNK) chunks.splice(c + 1, 0, chunk.splice(CHUNK));
  }

  remove(slot: Slot): void {
    const [c, i] = this.seek(this.ids[slot]!, false);
    const chunk = this.chunks[c];
    if (chunk === undefined || chunk[i] !== slot) return;
    chunk.splice(i, 1);
    if (chunk.length === 0) this.chunks.splice(c, 1);
  }

  /** Slots in `_id` order (descending: reversed) between the bounds, lazily: a caller that stops stops the walk. */
  *walk(lower: IdBound | undefined, upper: IdBound | undefined, descending: boolean): Generator<Slot> {
    const chunks = this.chunks;
    if (!descending) {
      let [c, i] = lower === undefined ? [0, 0] : this.seek(lower.id, !lower.inclusive);
      for (; c < chunks.length; c += 1, i = 0) {
        const chunk = chunks[c]!;
        for (; i < chunk.length; i += 1) {
          const slot = chunk[i]!;
          const id = this.ids[slot]!;
          if (upper !== undefined && (upper.inclusive ? id > upper.id : id >= upper.id)) return;
          yield slot;
        }
      }
      return;
    }
    let [c, i] = upper === undefined ? [chunks.length, 0] : this.seek(upper.id, upper.inclusive);
    // (c, i) is the first position past the range: step back from it.
    i -= 1;
    for (;;) {
      if (i < 0) {
        c -= 1;
        if (c < 0) return;
        i = chunks[c]!.length - 1;
      }
      const slot = chunks[c]![i]!;
      const id = this.ids[slot]!;
      if (lower !== undefined && (lower.inclusive ? id < lower.id : id <= lower.id)) return;
      yield slot;
      i -= 1;
    }
  }

  /** Every slot in `_id` order, as an array (a snapshot for compaction). */
  all(): Slot[] {
    return this.chunks.flat();
  }
}

// ---------------------------------------------------------------------------
// Index keys. A key stands for the values of an index's fields in a document,
// with the equality NeDB's match uses for the scalars a filter may hold
// (strict equality: 1 and "1" differ). A field holding an array contributes
// each element (as NeDB's indexes and MongoDB's multikey indexes do), so a
// document has as many keys as combinations of its elements; an empty array
// contributes none. A missing field is a value of its own (undefined), as in
// NeDB's unique indexes: two documents lacking a uniquely indexed field clash.
// ---------------------------------------------------------------------------

type Key = string | number | boolean | null | undefined;

/** How a field is read: a plain name directly, a dotted path with getDotValue, a name an object could inherit through own fields only (own-path.ts). */
type Reading = "plain" | "dotted" | "own";

function readingOf(field: string): Reading {
  return reachesInherited(field) ? "own" : field.includes(".") ? "dotted" : "plain";
}

/** A value of an index's (or a sort's) field: getDotValue, without its string split for a plain field name. */
function valueAt(doc: PlainObject, field: string, reading: Reading): unknown {
  return reading === "plain" ? doc[field] : reading === "dotted" ? getDotValue(doc, field) : ownPathValue(doc, field);
}

/** A self-delimiting string for one value, so that a compound key is the concatenation of its fields'. */
function part(value: unknown): string {
  switch (typeof value) {
    case "string":
      return `s${value.length}:${value}`;
    case "number":
      return `n${value};`;
    case "boolean":
      return value ? "t" : "f";
    case "undefined":
      return "u";
    default: {
      if (value === null) return "z";
      const text = canonical(value);
      return `o${text.length}:${text}`;
    }
  }
}

/** Dates, objects and arrays (a value, not elements) as text: equal text for equal values. */
function canonical(value: unknown): string {
  if (value instanceof Date) return `D${value.getTime()}`;
  if (Array.isArray(value)) return `[${value.map(part).join(",")}]`;
  if (typeof value === "object" && value !== null) {
    const record = value as PlainObject;
    return `{${Object.keys(record)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${part(record[k])}`)
      .join(",")}}`;
  }
  return part(value);
}

/**
 * The key of one value in a single-field index: a scalar is its own Map key
 * (Map equality is NeDB's strict equality for them); anything else, and a
 * string starting with NUL, is text starting with NUL, which no other key does.
 */
function singleKey(value: unknown): Key {
  switch (typeof value) {
    case "string":
      return value.charCodeAt(0) === 0 ? `\u0000${part(value)}` : value;
    case "number":
    case "boolean":
    case "undefined":
      return value;
    default:
      return value === null ? null : `\u0000${part(value)}`;
  }
}

/** The values a field contributes: the elements of an array (through nested arrays), else the value. */
function expand(value: unknown, into: unknown[]): void {
  if (!Array.isArray(value)) {
    into.push(value);
    return;
  }
  for (const element of value) expand(element, into);
}

/** Whether a field's value differs between two versions of a document (for index upkeep). */
function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  return canonical(a) === canonical(b);
}

/**
 * A unique index's key as kept: a 32-bit hash of its text (FNV-1a, then
 * murmur3's finalizer to spread similar texts), a small integer V8 stores in
 * the Map's entry itself. The text (e.g. `s14:acc_…:tests35:none:eml_…`, an
 * email's tenant and idempotency key) was a string of about 100 bytes per
 * document, kept by the index alone once the document is at rest. Two texts
 * may share a hash (about one pair among 100,000 keys): the index then holds
 * both documents under it, and whoever needs the key itself compares texts
 * (holder) or matches the documents (queries).
 */
export function keyHash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i += 1) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) | 0;
}

/** The text a unique index hashes for given values of its fields (tests: to find two that share a hash). */
export function uniqueKeyText(values: readonly unknown[]): string {
  let text = "";
  for (const value of values) text += part(value);
  return text;
}

/**
 * One hash index: the documents by the values of `fields` (an index, or a
 * leading part of a compound index). A unique one keeps hashes of its keys'
 * texts (keyHash) with their slot numbers in a HashSlots table, no object per
 * document; the others keep the keys themselves in a Map, which documents
 * share (a Map keeps the first copy only) and which a count may trust without
 * reading a document, each with its slot or, shared, a Posting of slots.
 */
class HashIndex {
  /** Unique indexes: hashes of key texts and their slots (several under a hash: only texts sharing it). */
  private readonly hashes: HashSlots | undefined;
  /** The other indexes: a key's documents, one slot or a posting when several share it. */
  private readonly buckets: Map<Key, Slot | Posting> | undefined;
  private readonly readings: Reading[];

  constructor(
    readonly fields: readonly string[],
    readonly unique: boolean,
    /** For DuplicateKeyError. */
    public name: string | undefined,
    readonly sparse: boolean,
    /** A document of a slot (to compare key texts under a shared hash). */
    private readonly read: (slot: Slot) => PlainObject,
    /** The collection's slots (how many numbers, to size a posting's bitmap). */
    private readonly slots: SlotArrays,
  ) {
    this.readings = fields.map(readingOf);
    if (unique) this.hashes = new HashSlots();
    else this.buckets = new Map();
  }

  /** Keys are hashes of texts (unique indexes). */
  get hashed(): boolean {
    return this.unique;
  }

  /** The keys of a document (usually one; none when an indexed array is empty). */
  keysOf(doc: PlainObject): Key[] {
    if (!this.hashed) return this.textsOf(doc);
    const texts = this.textsOf(doc) as string[];
    const keys: Key[] = new Array(texts.length);
    for (let k = 0; k < texts.length; k += 1) keys[k] = keyHash(texts[k]!);
    return keys;
  }

  /** Whether any of the index's fields holds a different value in `after` than in `before`. */
  differs(before: PlainObject, after: PlainObject): boolean {
    const fields = this.fields;
    for (let f = 0; f < fields.length; f += 1) {
      const reading = this.readings[f]!;
      if (!sameValue(valueAt(before, fields[f]!, reading), valueAt(after, fields[f]!, reading))) return true;
    }
    return false;
  }

  /** The keys of a document as the index would keep them unhashed (a unique index: always texts of parts). */
  textsOf(doc: PlainObject): Key[] {
    const fields = this.fields;
    if (this.sparse && fields.every((field, f) => valueAt(doc, field, this.readings[f]!) === undefined)) return [];
    if (fields.length === 1 && !this.hashed) {
      const value = valueAt(doc, fields[0]!, this.readings[0]!);
      if (!Array.isArray(value)) return [singleKey(value)];
      const values: unknown[] = [];
      expand(value, values);
      return [...new Set(values.map(singleKey))];
    }
    // Each key's parts, joined at the end: join makes one flat string, where
    // `+=` made a chain of concatenations that a Map key kept whole (about
    // 200 bytes per key of two fields instead of 85).
    let keys: string[][] = [[]];
    for (let f = 0; f < fields.length; f += 1) {
      const value = valueAt(doc, fields[f]!, this.readings[f]!);
      if (!Array.isArray(value)) {
        const text = part(value);
        for (let k = 0; k < keys.length; k += 1) keys[k]!.push(text);
        continue;
      }
      const values: unknown[] = [];
      expand(value, values);
      const parts = [...new Set(values.map(part))];
      keys = keys.flatMap((prefix) => parts.map((text) => [...prefix, text]));
    }
    return keys.map((key) => key.join(""));
  }

  /** The key of given scalar values of the fields (a filter's equality). */
  keyOfValues(values: readonly unknown[]): Key {
    if (this.hashed) return keyHash(uniqueKeyText(values));
    if (values.length === 1) return singleKey(values[0]);
    return uniqueKeyText(values);
  }

  /** A document other than `self` that holds one of `doc`'s keys, `keys` (unique indexes). */
  holder(doc: PlainObject, keys: readonly Key[], self: Slot | undefined): Slot | undefined {
    let texts: Key[] | undefined;
    for (let k = 0; k < keys.length; k += 1) {
      // Under a hash: the documents whose key has the same text, not only the same hash.
      for (const other of this.slotsOfKey(keys[k])) {
        if (other === self) continue;
        if (!this.hashed) return other;
        texts ??= this.textsOf(doc);
        if (this.textsOf(this.read(other)).includes(texts[k])) return other;
      }
    }
    return undefined;
  }

  add(slot: Slot, keys: readonly Key[]): void {
    const hashes = this.hashes;
    if (hashes !== undefined) {
      for (const key of keys) {
        // A document whose keys share a hash (two array elements): one entry.
        if (!this.holds(key as number, slot)) hashes.add(key as number, slot);
      }
      return;
    }
    const buckets = this.buckets!;
    for (const key of keys) {
      const found = buckets.get(key);
      if (found === undefined) buckets.set(key, slot);
      else if (typeof found !== "number") found.add(slot, this.slots.limit);
      else if (found !== slot) buckets.set(key, new Posting(found, slot));
    }
  }

  delete(slot: Slot, keys: readonly Key[]): void {
    const hashes = this.hashes;
    if (hashes !== undefined) {
      for (const key of keys) hashes.delete(key as number, slot);
      return;
    }
    const buckets = this.buckets!;
    for (const key of keys) {
      const found = buckets.get(key);
      if (found === slot) buckets.delete(key);
      else if (found !== undefined && typeof found !== "number") {
        found.delete(slot);
        if (found.size === 1) buckets.set(key, found.only());
      }
    }
  }

  private holds(hash: number, slot: Slot): boolean {
    const hashes = this.hashes!;
    for (let at = hashes.first(hash); at >= 0; at = hashes.next(hash, at)) if (hashes.slotAt(at) === slot) return true;
    return false;
  }

  sizeOf(key: Key): number {
    if (this.hashes !== undefined) return this.hashes.count(key as number);
    const found = this.buckets!.get(key);
    return found === undefined ? 0 : typeof found === "number" ? 1 : found.size;
  }

  /** The documents under one key (a unique index: under its hash). */
  private *slotsOfKey(key: Key): Generator<Slot> {
    const hashes = this.hashes;
    if (hashes !== undefined) {
      const hash = key as number;
      for (let at = hashes.first(hash); at >= 0; at = hashes.next(hash, at)) yield hashes.slotAt(at);
      return;
    }
    const found = this.buckets!.get(key);
    if (found === undefined) return;
    if (typeof found === "number") yield found;
    else yield* found.slots();
  }

  /** Documents of `keys`, each once. */
  *slotsOf(keys: readonly Key[]): Generator<Slot> {
    const seen = keys.length > 1 ? new Set<Slot>() : undefined;
    for (const key of keys) {
      for (const slot of this.slotsOfKey(key)) {
        if (seen !== undefined) {
          if (seen.has(slot)) continue;
          seen.add(slot);
        }
        yield slot;
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Index definitions (IndexSpec as the store keeps it).
// ---------------------------------------------------------------------------

export interface IndexDef {
  /** IndexSpec.name; undefined for an index read from a datafile line that has none (written by NeDB). */
  name: string | undefined;
  /** In declared order (from a NeDB line: NeDB's, sorted). */
  fields: string[];
  unique: boolean;
  arrayField?: string | undefined;
  /** NeDB's sparse unique index (only in datafiles NeDB wrote): documents lacking every field of it hold no key. */
  sparse?: boolean | undefined;
}

/** How NeDB names an index in its datafile (`fieldName`): its set of fields, sorted, comma-joined. */
export function indexKey(fields: readonly string[]): string {
  return [...fields].sort().join(",");
}

/**
 * The fields of an index that can select documents: those before `_id` (the
 * `_id` map does the rest, and a key including `_id` is one document). Unique
 * only with `_id` absent (through `_id`, an index is unique anyway).
 */
function servedFields(def: IndexDef): { fields: string[]; unique: boolean } {
  const at = def.fields.indexOf("_id");
  if (at === -1) return { fields: def.fields, unique: def.unique };
  return { fields: def.fields.slice(0, at), unique: false };
}

/** How a filter's condition on a field selects values by equality: the values, or undefined when it does not. */
function equalityValues(condition: unknown): unknown[] | undefined {
  if (isLookupScalar(condition)) return [condition];
  if (!isPlainObject(condition)) return undefined; // null also matches a missing field
  const eq = condition.$eq;
  if (isLookupScalar(eq)) return [eq];
  const list = condition.$in;
  if (Array.isArray(list) && !list.includes(null)) return [...new Set(list)];
  // $all: every document holding all the values holds the first.
  const all = condition.$all;
  if (Array.isArray(all) && all.length > 0) return [all[0]];
  return undefined;
}

/**
 * Whether taking the documents by the `_id` values of `condition` (see
 * candidates) yields exactly the documents it matches, so that matching need
 * not check it again: a value, or `$eq` or `$in` alone. Matching a
 * thousand-id `$in` against each of its thousand documents was quadratic.
 */
export function idLookupIsExact(condition: unknown): boolean {
  // The shapes for which equalityValues takes every value, checked without copying an $in list.
  if (isLookupScalar(condition)) return true;
  if (!isPlainObject(condition)) return false;
  const ops = Object.keys(condition);
  if (ops.length !== 1) return false;
  if (ops[0] === "$eq") return isLookupScalar(condition.$eq);
  return ops[0] === "$in" && Array.isArray(condition.$in) && !condition.$in.includes(null);
}

function isLookupScalar(value: unknown): boolean {
  return typeof value === "string" || typeof value === "number" || typeof value === "boolean";
}

/** Index keys one lookup may take (a product of $in lists) before a shorter leading part is used instead. */
const MAX_LOOKUP_KEYS = 4096;

/** Candidates of a query: the documents an index gives, a superset of the matches. */
interface Candidates {
  size: number;
  slots: () => Iterable<Slot>;
  /** Taken by `_id`: the query matched against them may leave out its `_id` condition (idLookupIsExact), so they are never walked past. */
  byId?: boolean;
  /** Exactly the documents the filter matches (see exactLookup): a count needs not read them. */
  exact?: boolean;
  /** Under one key of the index: `size` counts each document once (under several, one holding an array may be under more than one). */
  oneKey?: boolean;
}

export interface SelectOptions {
  sort?: SortSpec | undefined;
  limit?: number | undefined;
}

/** Where a collection on disk reads documents at rest from, and the cache they go through. */
export interface AtRest {
  reader: LineReader;
  cache: DocCache;
}

/** A compaction's view of one live document (datafile.ts SnapshotLine, with its slot and version). */
export interface SnapshotEntry {
  slot: Slot;
  version: number;
  doc: PlainObject | undefined;
  at: number;
  len: number;
  newAt: number;
  newLen: number;
}

export class MemoryTable {
  /** Undefined: memory only (every slot keeps its document). */
  constructor(private readonly atRest?: AtRest) {}

  /** `peek` for the indexes (comparing key texts under a shared hash). */
  private readonly reader = (slot: Slot): PlainObject => this.peek(slot);

  private readonly slots = new SlotArrays();
  /** Slots by a hash of their `_id` (keyHash), told apart by the id itself. */
  private readonly byId = new HashSlots();
  private readonly ordered = new OrderedSlots(this.slots.ids);
  private readonly byIdAscending = (a: Slot, b: Slot): number => {
    const ids = this.slots.ids;
    return ids[a]! < ids[b]! ? -1 : ids[a]! > ids[b]! ? 1 : 0;
  };
  /** Index definitions by indexKey. */
  private readonly defs = new Map<string, IndexDef>();
  /** Hash indexes by their fields (NUL-joined, in order). */
  private maps = new Map<string, HashIndex>();
  /** The hash indexes kept up to date: the unique ones always, the others from the first query that uses them. */
  private live: HashIndex[] = [];
  /** For each definition, the hash indexes of its leading fields (one field, two, ...). */
  private chains: HashIndex[][] = [];

  get size(): number {
    return this.byId.size;
  }

  get(id: string): Slot | undefined {
    const hash = keyHash(id);
    const byId = this.byId;
    const ids = this.slots.ids;
    for (let at = byId.first(hash); at >= 0; at = byId.next(hash, at)) {
      const slot = byId.slotAt(at);
      if (ids[slot] === id) return slot;
    }
    return undefined;
  }

  /** Slot numbers used so far, free ones included (tests: removals' numbers are reused). */
  get slotNumbers(): number {
    return this.slots.limit;
  }

  /** A slot's `_id`. */
  idOf(slot: Slot): string {
    return this.slots.ids[slot]!;
  }

  /** A slot's version now (which of its lines is current: see placed). */
  versionOf(slot: Slot): number {
    return this.slots.version[slot]!;
  }

  /** A slot's document, read from the datafile into the cache when not in memory. */
  doc(slot: Slot): PlainObject {
    const slots = this.slots;
    const doc = slots.docs[slot];
    if (doc !== undefined) {
      slots.flags[slot] = slots.flags[slot]! | READ;
      return doc;
    }
    return this.keep(slot, this.atRest!.reader.read(slots.at[slot]!, slots.len[slot]!));
  }

  /** A slot's document, read from the datafile without caching it when not in memory. */
  peek(slot: Slot): PlainObject {
    const slots = this.slots;
    return slots.docs[slot] ?? this.atRest!.reader.read(slots.at[slot]!, slots.len[slot]!);
  }

  /** Caches a document `peek` read (a match the caller will use). */
  private keep(slot: Slot, doc: PlainObject): PlainObject {
    const slots = this.slots;
    const cached = slots.docs[slot];
    if (cached !== undefined) {
      slots.flags[slot] = slots.flags[slot]! | READ;
      return cached;
    }
    // The slot's own `_id` string instead of the one just parsed: a cached document would otherwise hold a
    // second copy (80 bytes for a campaign's ledger row id).
    doc._id = slots.ids[slot];
    slots.docs[slot] = doc;
    this.atRest!.cache.admit(slots, slot);
    return doc;
  }

  /**
   * The current version's line is in the file at `at` (an append finished, or
   * a rewrite moved it): the document may leave memory from now on. Ignored
   * when `version` is no longer the slot's (replaced or removed since).
   */
  placed(slot: Slot, version: number, at: number, len: number): void {
    const slots = this.slots;
    if (slots.version[slot] !== version || this.atRest === undefined) return;
    slots.at[slot] = at;
    const cache = this.atRest.cache;
    cache.resize(slots, slot, len);
    if (slots.docs[slot] !== undefined) cache.admit(slots, slot);
  }

  indexDefs(): IndexDef[] {
    return [...this.defs.values()];
  }

  /**
   * Adds or replaces (same set of fields) an index definition; a unique index
   * is built at once and refused with DuplicateKeyError over duplicates
   * (nothing changes then). Answers whether anything changed.
   */
  defineIndex(def: IndexDef): boolean {
    const key = indexKey(def.fields);
    const existing = this.defs.get(key);
    if (existing !== undefined && sameDef(existing, def)) return false;
    const defs = new Map(this.defs);
    defs.set(key, def);
    this.rebuild(defs);
    return true;
  }

  /** Drops an index definition (a `$$indexRemoved` line). */
  removeIndex(key: string): void {
    if (!this.defs.has(key)) return;
    const defs = new Map(this.defs);
    defs.delete(key);
    this.rebuild(defs);
  }

  /** Derives the hash indexes from `defs`, keeping those that stay as they are; throws before changing anything. */
  private rebuild(defs: Map<string, IndexDef>): void {
    const wanted = new Map<string, { fields: string[]; unique: boolean; name: string | undefined; sparse: boolean }>();
    const chainFields: string[][][] = [];
    for (const def of defs.values()) {
      const served = servedFields(def);
      const chain: string[][] = [];
      for (let n = 1; n <= served.fields.length; n += 1) {
        const fields = served.fields.slice(0, n);
        const id = fields.join("\u0000");
        const unique = served.unique && n === served.fields.length;
        const seen = wanted.get(id);
        const sparse = unique && def.sparse === true;
        if (seen === undefined || (unique && !seen.unique)) wanted.set(id, { fields, unique, name: unique ? def.name : undefined, sparse });
        chain.push(fields);
      }
      chainFields.push(chain);
    }
    const maps = new Map<string, HashIndex>();
    for (const [id, want] of wanted) {
      const kept = this.maps.get(id);
      if (kept !== undefined && kept.unique === want.unique && kept.sparse === want.sparse) {
        kept.name = want.name;
        maps.set(id, kept);
        continue;
      }
      const map = new HashIndex(want.fields, want.unique, want.name, want.sparse, this.reader, this.slots);
      if (want.unique) this.fill(map);
      maps.set(id, map);
    }
    this.defs.clear();
    for (const [key, def] of defs) this.defs.set(key, def);
    this.maps = maps;
    this.live = [...maps.values()].filter((map) => map.unique || this.live.includes(map));
    this.chains = chainFields.map((chain) => chain.map((fields) => maps.get(fields.join("\u0000"))!));
  }

  /** Indexes every document in these indexes, reading each once; a unique index refuses duplicates. */
  private fill(...maps: HashIndex[]): void {
    for (const slot of this.ordered.walk(undefined, undefined, false)) {
      const doc = this.peek(slot);
      for (const map of maps) {
        const keys = map.keysOf(doc);
        if (map.unique && map.holder(doc, keys, slot) !== undefined) throw new DuplicateKeyError(map.name);
        map.add(slot, keys);
      }
    }
  }

  /**
   * Stores a new document (its own object from now on); DuplicateKeyError
   * before any change. `at`, `len`: where its line is already (a load), else
   * it stays in memory until placed.
   */
  insert(doc: PlainObject, at = -1, len = 0): Slot {
    const id = doc._id as string;
    if (this.get(id) !== undefined) throw new DuplicateKeyError("_id_");
    const live = this.live;
    const keys: Key[][] = new Array(live.length);
    for (let i = 0; i < live.length; i += 1) {
      const map = live[i]!;
      keys[i] = map.keysOf(doc);
      if (map.unique && map.holder(doc, keys[i]!, undefined) !== undefined) throw new DuplicateKeyError(map.name);
    }
    const slot = this.slots.allocate(id, doc, at, len);
    this.byId.add(keyHash(id), slot);
    this.ordered.insert(slot);
    for (let i = 0; i < live.length; i += 1) live[i]!.add(slot, keys[i]!);
    if (at >= 0) this.atRest?.cache.admit(this.slots, slot);
    return slot;
  }

  /** Replaces a document by its new version; only index entries whose key changed move. DuplicateKeyError before any change. */
  replace(slot: Slot, next: PlainObject): void {
    const previous = this.peek(slot);
    // Each index's fields compared afresh (a field in two indexes twice): cheaper than a Map and a closure per write.
    let moves: Array<[HashIndex, Key[], Key[]]> | undefined;
    for (const map of this.live) {
      if (!map.differs(previous, next)) continue;
      // Texts, not hashes: a new text sharing the old one's hash must still be checked against its holders.
      const beforeTexts = map.textsOf(previous);
      const afterTexts = map.textsOf(next);
      if (beforeTexts.length === afterTexts.length && beforeTexts.every((key, i) => key === afterTexts[i])) continue;
      const before = map.hashed ? beforeTexts.map((text) => keyHash(text as string)) : beforeTexts;
      const after = map.hashed ? afterTexts.map((text) => keyHash(text as string)) : afterTexts;
      if (map.unique && map.holder(next, after, slot) !== undefined) throw new DuplicateKeyError(map.name);
      (moves ??= []).push([map, before, after]);
    }
    for (const [map, before, after] of moves ?? []) {
      map.delete(slot, before);
      map.add(slot, after);
    }
    const slots = this.slots;
    slots.docs[slot] = next;
    // In memory until its line is appended (placed).
    slots.version[slot] = (slots.version[slot]! + 1) >>> 0;
    slots.at[slot] = -1;
  }

  remove(slot: Slot): void {
    const slots = this.slots;
    if (!slots.isLive(slot)) return;
    const doc = this.peek(slot);
    const id = slots.ids[slot]!;
    this.byId.delete(keyHash(id), slot);
    this.ordered.remove(slot);
    for (const map of this.live) map.delete(slot, map.keysOf(doc));
    this.atRest?.cache.forget(slots, slot);
    // Its number may serve the next insert: a line of it queued or rewritten meanwhile is told apart by its version.
    slots.release(slot);
  }

  /**
   * Every live document in `_id` order, for compaction: its line in the
   * file, or (not appended yet) its document, never changed in place.
   */
  snapshot(): SnapshotEntry[] {
    const slots = this.slots;
    return this.ordered.all().map((slot) => ({
      slot,
      version: slots.version[slot]!,
      doc: slots.at[slot]! < 0 ? slots.docs[slot] : undefined,
      at: slots.at[slot]!,
      len: slots.len[slot]!,
      newAt: -1,
      newLen: 0,
    }));
  }

  // -------------------------------------------------------------------------
  // Queries. `filter` is the port's filter (for planning), `query` its NeDB
  // translation (for matching). Planning: `_id` equality or $in takes the
  // documents by id; else, among the indexes whose leading fields all have
  // equality or $in conditions (top-level), the one whose lookup yields the
  // fewest documents (for a count, one whose lookup is exactly the filter
  // first: then no document is read); else a walk in `_id` order within the
  // filter's `_id` range. Every candidate is then matched against the whole
  // query, except by a count from an exact lookup.
  // -------------------------------------------------------------------------

  private candidates(filter: AnyFilter, forCount = false): Candidates | undefined {
    const ids = equalityValues(filter._id);
    if (ids !== undefined) {
      const slots: Slot[] = [];
      for (const id of ids) {
        const slot = typeof id === "string" ? this.get(id) : undefined;
        if (slot !== undefined) slots.push(slot);
      }
      return { size: slots.length, slots: () => slots, byId: true };
    }
    let best: Candidates | undefined;
    const lists = new Map<string, unknown[] | undefined>();
    const valuesOf = (field: string): unknown[] | undefined => {
      if (!lists.has(field)) lists.set(field, equalityValues(filter[field]));
      return lists.get(field);
    };
    // Per index, the longest leading part with equality on each field, within MAX_LOOKUP_KEYS.
    const usable = new Set<HashIndex>();
    for (const chain of this.chains) {
      let map: HashIndex | undefined;
      let combos = 1;
      for (const next of chain) {
        const values = valuesOf(next.fields[next.fields.length - 1]!);
        if (values === undefined || combos * values.length > MAX_LOOKUP_KEYS) break;
        combos *= values.length;
        map = next;
      }
      if (map !== undefined) usable.add(map);
    }
    // A leading part of another usable one gives a superset of its documents: not worth building.
    const chosen = [...usable].filter(
      (map) => ![...usable].some((other) => other.fields.length > map.fields.length && map.fields.every((field, i) => other.fields[i] === field)),
    );
    // The ones first used now are built together: one read of each document for all of them.
    const unbuilt = chosen.filter((map) => !this.live.includes(map));
    if (unbuilt.length > 0) {
      this.fill(...unbuilt);
      this.live.push(...unbuilt);
    }
    for (const map of chosen) {
      let tuples: unknown[][] = [[]];
      for (const field of map.fields) tuples = tuples.flatMap((tuple) => valuesOf(field)!.map((value) => [...tuple, value]));
      const keys = tuples.map((tuple) => map.keyOfValues(tuple));
      let size = 0;
      for (const key of keys) size += map.sizeOf(key);
      const exact = !map.hashed && exactLookup(filter, map.fields);
      // A count takes an exact lookup over any other (it then reads no document: an audience's
      // holders of some tags, by status and tag, against all active subscribers by status alone,
      // fewer than the tags' keys add up to); a find the fewest documents (it reads each anyway),
      // of two as many the exact one.
      const bestExact = best?.exact === true;
      let better: boolean;
      if (best === undefined || size === 0) better = true;
      else if (forCount && exact !== bestExact) better = exact;
      else better = size < best.size || (size === best.size && exact && !bestExact);
      if (better) best = { size, slots: () => map.slotsOf(keys), exact, oneKey: keys.length === 1 };
      // None: nothing matches, whatever the other indexes say.
      if (size === 0) break;
    }
    return best;
  }

  /** The documents matching, in `_id` order unless sorted otherwise (index candidates: in index order), at most `limit`. */
  select(filter: AnyFilter, query: PlainObject, options: SelectOptions = NO_OPTIONS): Slot[] {
    const id = filter._id;
    if (typeof id === "string") {
      // One `_id` (most writes' filters): at most one document, so no plan, sort or page to make.
      const slot = this.get(id);
      if (slot === undefined) return [];
      const doc = this.peek(slot);
      if (!match(doc, query)) return [];
      this.keep(slot, doc);
      return [slot];
    }
    const { sort, limit } = options;
    const sortKeys = sort === undefined ? [] : Object.keys(sort);
    const candidates = this.candidates(filter);
    const [lower, upper] = idRange(filter._id);
    if (sortKeys.length === 1 && sortKeys[0] === "_id") {
      const descending = sort!._id === -1;
      if (candidates !== undefined) {
        // A page (limit) from more candidates than it holds: walk in `_id` order
        // and stop when the page is full, unless the walk passes as many
        // documents as there are candidates (or its budget) first, meeting too
        // few matches (a selective query) — then match and sort the candidates.
        // Sorting every candidate for each page instead made an audience read in
        // pages of 5,000 quadratic: 1.9 million matches for 100,000 subscribers.
        if (limit !== undefined && candidates.size > limit && candidates.byId !== true) {
          const page = this.walkPage(query, lower, upper, descending, limit, Math.min(walkBudget(limit), candidates.size));
          if (page !== undefined) return page;
        }
        const found = this.matching(candidates.slots(), query, undefined).sort(this.byIdAscending);
        if (descending) found.reverse();
        return limit === undefined ? found : found.slice(0, limit);
      }
      return this.walkPage(query, lower, upper, descending, limit, undefined)!;
    }
    const source = candidates !== undefined ? candidates.slots() : this.ordered.walk(lower, upper, false);
    if (sortKeys.length === 0) return this.matching(source, query, limit);
    // Sorted with the documents at hand: a small cache may have let go of them already.
    const found: Array<{ slot: Slot; doc: PlainObject }> = [];
    for (const slot of source) {
      const doc = this.peek(slot);
      if (match(doc, query)) found.push({ slot, doc });
    }
    const criteria = sortKeys.map((key) => ({ key, direction: sort![key]!, reading: readingOf(key) }));
    found.sort((a, b) => {
      for (const { key, direction, reading } of criteria) {
        const order = direction * compareThings(valueAt(a.doc, key, reading), valueAt(b.doc, key, reading));
        if (order !== 0) return order;
      }
      return 0;
    });
    const page = limit === undefined ? found : found.slice(0, limit);
    return page.map(({ slot, doc }) => {
      this.keep(slot, doc);
      return slot;
    });
  }

  /** Matches in `_id` order from the range's start; undefined when `budget` documents were passed first. */
  private walkPage(query: PlainObject, lower: IdBound | undefined, upper: IdBound | undefined, descending: boolean, limit: number | undefined, budget: number | undefined): Slot[] | undefined {
    const page: Slot[] = [];
    let walked = 0;
    for (const slot of this.ordered.walk(lower, upper, descending)) {
      if (budget !== undefined && ++walked > budget) return undefined;
      const doc = this.peek(slot);
      if (!match(doc, query)) continue;
      this.keep(slot, doc);
      page.push(slot);
      if (page.length === limit) break;
    }
    return page;
  }

  first(filter: AnyFilter, query: PlainObject): Slot | undefined {
    return this.select(filter, query, { limit: 1 })[0];
  }

  count(filter: AnyFilter, query: PlainObject): number {
    if (Object.keys(filter).length === 0) return this.byId.size;
    const candidates = this.candidates(filter, true);
    const [lower, upper] = idRange(filter._id);
    let n = 0;
    if (candidates?.exact === true) {
      // None read: documents at rest stay on disk. One key: its size (the sandbox's cap counts a
      // tenant's rows and each segment's at every trim; walking them was a seventh of its keeps).
      // Several: each once (slotsOf).
      if (candidates.oneKey === true) return candidates.size;
      for (const _ of candidates.slots()) n += 1;
      return n;
    }
    for (const slot of candidates !== undefined ? candidates.slots() : this.ordered.walk(lower, upper, false)) {
      if (match(this.peek(slot), query)) n += 1;
    }
    return n;
  }

  /** The candidates matching, at most `limit`; the matches are cached. */
  private matching(source: Iterable<Slot>, query: PlainObject, limit: number | undefined): Slot[] {
    const found: Slot[] = [];
    for (const slot of source) {
      const doc = this.peek(slot);
      if (!match(doc, query)) continue;
      this.keep(slot, doc);
      found.push(slot);
      if (found.length === limit) break;
    }
    return found;
  }
}

/**
 * Whether an index lookup on `fields` yields exactly the documents `filter`
 * matches: the filter is equalities or `$in` lists (without null) on those
 * fields alone, each read plainly (a top-level name). An index keys each
 * element of an array field, and NeDB's equality on an array field holds when
 * an element equals, so arrays keep it exact.
 */
function exactLookup(filter: AnyFilter, fields: readonly string[]): boolean {
  const keys = Object.keys(filter);
  if (keys.length !== fields.length) return false;
  for (const field of fields) {
    if (readingOf(field) !== "plain" || !idLookupIsExact(filter[field])) return false;
  }
  return true;
}

/** Documents passed by a page walk before the candidates are sorted instead (as the NeDB-based adapter did). */
function walkBudget(limit: number): number {
  return Math.max(2000, limit * 20);
}

/** The `_id` range a condition on `_id` names ($gt/$gte, $lt/$lte); strings only (ids are strings). */
const NO_OPTIONS: SelectOptions = {};
const NO_RANGE: [undefined, undefined] = [undefined, undefined];

function idRange(condition: unknown): [IdBound | undefined, IdBound | undefined] {
  if (!isPlainObject(condition)) return NO_RANGE;
  let lower: IdBound | undefined;
  let upper: IdBound | undefined;
  if (typeof condition.$gt === "string") lower = { id: condition.$gt, inclusive: false };
  else if (typeof condition.$gte === "string") lower = { id: condition.$gte, inclusive: true };
  if (typeof condition.$lt === "string") upper = { id: condition.$lt, inclusive: false };
  else if (typeof condition.$lte === "string") upper = { id: condition.$lte, inclusive: true };
  // $gt and $gte together (or $lt and $lte): the walk takes one, the match checks both.
  return [lower, upper];
}

function sameDef(a: IndexDef, b: IndexDef): boolean {
  return (
    a.name === b.name &&
    a.unique === b.unique &&
    a.arrayField === b.arrayField &&
    (a.sparse === true) === (b.sparse === true) &&
    a.fields.length === b.fields.length &&
    a.fields.every((field, i) => field === b.fields[i])
  );
}
