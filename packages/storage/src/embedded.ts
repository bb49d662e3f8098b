// The embedded document store: every collection's indexes in memory
// (memory-table.ts), its documents at rest in one append-only datafile per
// collection under `dataDir` in NeDB's format (datafile.ts), read back through
// a bounded cache (at-rest.ts); or memory only for unit tests. It serves the same port as
// MongoDB so that `npm start` needs no server. Filters are translated into
// NeDB's query language and matched, and updates applied, by NeDB's own pure
// functions (@seald-io/nedb/lib/model.js); the translation below makes them
// answer as MongoDB would wherever the two languages differ.

/// <reference path="./nedb-model.d.ts" />
import { mkdir } from "node:fs/promises";
import * as path from "node:path";
import { lockDir, type DirLock } from "@emailsvc/dir-lock";
import { match as nedbMatch, modify } from "@seald-io/nedb/lib/model.js";
import {
  checkBatch,
  checkCollectionName,
  checkDocument,
  checkFilter,
  checkFindOptions,
  checkIndexSpecs,
  checkUpdates,
  checkUpsertScope,
  isPlainObject,
  normalizeUpdate,
  withFastFields,
  type PlainObject,
} from "./checks.js";
import { DocCache, LineReader, READ_AHEAD_BYTES, sharedCache } from "./at-rest.js";
import { deletionLine, FILE_MODE, indexLine, loadLiveLines, readDatafile, rewriteDatafile, serializeDoc, type RawIndex, type TailLines } from "./datafile.js";
import { GroupAppender, type AppendedBatch } from "./group-append.js";
import { idLookupIsExact, indexKey, MemoryTable, type IndexDef, type Slot } from "./memory-table.js";
import { ownPathValue, reachesInherited } from "./own-path.js";
import {
  DuplicateKeyError,
  type Collection,
  type AnyDoc,
  type Doc,
  type DocumentStore,
  type AnyFilter,
  type Filter,
  type FindOptions,
  type IndexSpec,
  type InsertManyResult,
  type AnyUpdate,
  type FilteredUpdate,
  type Update,
  type UpsertManyResult,
} from "./types.js";

export interface EmbeddedStoreOptions {
  /** Directory of the datafiles, created if missing; memory only when undefined. */
  dataDir?: string | undefined;
  /** How often datafiles holding history (earlier values, deleted documents) are compacted while open; default 10 minutes. */
  compactionIntervalMs?: number;
  /** How long to wait for another process holding the directory before refusing (default 10 s; see @emailsvc/dir-lock). */
  lockWaitMs?: number;
  /**
   * Bytes of datafile lines whose documents stay decoded in memory, read or
   * written lately (at-rest.ts); the others are read from the datafile when
   * needed. Default: one cache for every store of the thread, EMBEDDED_CACHE_MB
   * (8 MB unless set). Documents not yet appended are in memory regardless.
   */
  cacheBytes?: number;
  /** Bytes read at once when a document's line is read near the last one read (at-rest.ts, LineReader); default 64 KB; 0 reads each line alone (the benchmark's baseline). */
  readAheadBytes?: number;
}

const DEFAULT_COMPACTION_INTERVAL_MS = 10 * 60 * 1000;

export function openEmbeddedStore(options: EmbeddedStoreOptions = {}): Promise<EmbeddedDocumentStore> {
  return EmbeddedDocumentStore.open(options);
}

// The store keeps its indexes and where each line is in memory, and rewrites
// its datafile on load and on compaction, so two stores on one file would silently overwrite each
// other's writes. Another process is kept out of a directory by its lock file
// (@emailsvc/dir-lock); within this process, stores may share a directory (tests
// reopen one while another is open) but each datafile belongs to one open store
// at a time.

/** Directories locked by this process, with how many open stores use each. */
const lockedDirs = new Map<string, { stores: number; locked: Promise<DirLock> }>();
/** Datafiles held by an open store of this process. */
const openDatafiles = new Set<string>();

async function acquireDir(dir: string, waitMs: number | undefined): Promise<void> {
  let entry = lockedDirs.get(dir);
  if (entry === undefined) {
    entry = { stores: 0, locked: lockDir(dir, "embedded store", waitMs !== undefined ? { waitMs } : {}) };
    lockedDirs.set(dir, entry);
  }
  entry.stores += 1;
  try {
    await entry.locked;
  } catch (error) {
    await releaseDir(dir);
    throw error;
  }
}

async function releaseDir(dir: string): Promise<void> {
  const entry = lockedDirs.get(dir);
  if (entry === undefined) return;
  entry.stores -= 1;
  if (entry.stores > 0) return;
  lockedDirs.delete(dir);
  const lock = await entry.locked.catch(() => undefined);
  await lock?.release();
}

/** Shared by a store and its collections, so that a closed store refuses work. */
interface StoreState {
  closed: boolean;
}

export class EmbeddedDocumentStore implements DocumentStore {
  private readonly collections = new Map<string, EmbeddedCollection<Doc>>();
  private readonly compactionTimer: NodeJS.Timeout | undefined;
  private readonly state: StoreState = { closed: false };
  private readonly cache: DocCache;
  private readonly readAheadBytes: number;

  /** Creates and locks the directory (if any) before the first datafile is read. */
  static async open(options: EmbeddedStoreOptions = {}): Promise<EmbeddedDocumentStore> {
    if (options.dataDir === undefined) return new EmbeddedDocumentStore(undefined, options);
    const dir = path.resolve(options.dataDir);
    await mkdir(dir, { recursive: true });
    await acquireDir(dir, options.lockWaitMs);
    return new EmbeddedDocumentStore(dir, options);
  }

  private constructor(
    private readonly dataDir: string | undefined,
    options: EmbeddedStoreOptions,
  ) {
    this.cache = options.cacheBytes !== undefined ? new DocCache(options.cacheBytes) : sharedCache();
    this.readAheadBytes = options.readAheadBytes ?? READ_AHEAD_BYTES;
    if (dataDir !== undefined) {
      // Unref'd: it must not keep the process alive.
      this.compactionTimer = setInterval(() => {
        for (const collection of this.collections.values()) {
          collection.compact("dirty").catch((error: unknown) => {
            console.warn(`embedded store: compaction of ${collection.name} failed:`, error);
          });
        }
      }, options.compactionIntervalMs ?? DEFAULT_COMPACTION_INTERVAL_MS);
      this.compactionTimer.unref();
    }
  }

  collection<T extends Doc = AnyDoc>(name: string): Collection<T> {
    assertOpen(this.state);
    checkCollectionName(name);
    let collection = this.collections.get(name);
    if (collection === undefined) {
      const filename = this.dataDir === undefined ? undefined : path.join(this.dataDir, `${name}.db`);
      if (filename !== undefined) {
        if (openDatafiles.has(filename)) throw new Error(`${filename} is open in another store of this process`);
        openDatafiles.add(filename);
      }
      collection = new EmbeddedCollection<Doc>(name, filename, this.state, this.cache, this.readAheadBytes);
      this.collections.set(name, collection);
    }
    return collection as unknown as Collection<T>;
  }

  async ping(): Promise<boolean> {
    return !this.state.closed;
  }

  /** Waits for pending writes, compacts every datafile holding history and releases the directory. */
  async close(): Promise<void> {
    if (this.state.closed) return;
    this.state.closed = true;
    if (this.compactionTimer !== undefined) clearInterval(this.compactionTimer);
    try {
      await Promise.all([...this.collections.values()].map((collection) => collection.compact("dirty")));
    } finally {
      await Promise.all([...this.collections.values()].map((collection) => collection.closeFile()));
      for (const collection of this.collections.values()) {
        if (collection.filename !== undefined) openDatafiles.delete(collection.filename);
      }
      if (this.dataDir !== undefined) await releaseDir(this.dataDir);
    }
  }
}

function assertOpen(state: StoreState): void {
  // After close the directory may belong to another process: writing would corrupt it.
  if (state.closed) throw new Error("embedded store is closed");
}

/** A copy of a stored document for a caller: stored documents hold only JSON-like values (and Dates, which pass checks). */
function copyValue(value: unknown): unknown {
  if (typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) {
    const out = new Array<unknown>(value.length);
    for (let i = 0; i < value.length; i += 1) out[i] = copyValue(value[i]);
    return out;
  }
  if (value instanceof Date) return new Date(value.getTime());
  const out: PlainObject = {};
  const keys = Object.keys(value);
  for (const key of keys) out[key] = copyValue((value as PlainObject)[key]);
  return withFastFields(out, keys.length);
}

function copyDoc<T>(doc: PlainObject): T {
  return copyValue(doc) as T;
}

/** Compaction's verdict on a datafile: `dirty` rewrites only a file holding more than its live documents. */
type CompactMode = "always" | "dirty";

class EmbeddedCollection<T extends Doc> implements Collection<T> {
  private readonly table: MemoryTable;
  /** Positional reads of the datafile's lines (documents at rest); undefined in memory. */
  private readonly reader: LineReader | undefined;
  /** Resolves once the datafile is read (at once in memory); a failed load is reported by every operation. */
  private readonly ready: Promise<void>;
  private loaded = false;
  /** Fields of the compound indexes created here, with the index's name: they must never hold arrays (IndexSpec.arrayField). */
  private readonly compoundFields = new Map<string, string>();
  /** Appends this collection's writes to its datafile, many writes per append (group-append.ts). */
  private readonly appender: GroupAppender | undefined;
  /** Lines the datafile holds once the queued appends are done: more than the live documents and indexes means history to compact. */
  private fileLines = 0;
  /** Whether the file may lack lines memory has (a failed append or rewrite): the next compaction rewrites it whatever the count says. */
  private fileStale = false;
  /** The rewrite of the datafile running now, and the one asked for while it runs (compact()). */
  private compacting: Promise<void> | undefined;
  private compactNext: Promise<void> | undefined;

  constructor(
    readonly name: string,
    /** The datafile; memory only when undefined. */
    readonly filename: string | undefined,
    private readonly state: StoreState,
    cache: DocCache,
    readAheadBytes: number,
  ) {
    if (filename !== undefined) {
      this.reader = new LineReader(filename, () => this.appender!.size, readAheadBytes);
      this.table = new MemoryTable({ reader: this.reader, cache });
      this.appender = new GroupAppender(
        filename,
        FILE_MODE,
        (error) => {
          this.fileStale = true;
          console.error(`embedded store: appending to ${filename} failed; writes since are in memory only until the next compaction:`, error);
        },
        (slot, version, at, len) => this.table.placed(slot, version, at, len),
      );
    } else this.table = new MemoryTable();
    this.ready = this.load();
    // A failed load is reported by every operation that awaits `ready`.
    this.ready.catch(() => undefined);
  }

  private async load(): Promise<void> {
    if (this.filename === undefined) {
      this.loaded = true;
      return;
    }
    // Two passes: where each live document's last line is, then those lines,
    // read into the table (indexes first) and left on disk.
    const file = await readDatafile(this.filename);
    for (const raw of file.indexes.values()) {
      const fields = Array.isArray(raw.fields) && indexKey(raw.fields) === raw.fieldName ? raw.fields : raw.fieldName.split(",");
      // NeDB's own `_id` index is never written. `sparse` is NeDB's (this platform never made one): kept as read.
      if (fields.length === 1 && fields[0] === "_id") continue;
      this.table.defineIndex({ name: raw.name, fields, unique: raw.unique === true, arrayField: raw.arrayField, sparse: raw.sparse === true });
    }
    this.reader!.reopen();
    await loadLiveLines(this.filename, file.live, (doc, at, len) => this.table.insert(doc, at, len));
    this.appender!.size = file.size;
    this.fileLines = file.lines;
    this.fileStale = file.corrupt > 0 || file.tornTail;
    if (file.corrupt > 0 || file.tornTail) {
      console.warn(`embedded store: ${this.filename}: dropped ${file.corrupt} corrupt line(s)${file.tornTail ? " and a last line cut short" : ""}`);
    }
    this.loaded = true;
    // As NeDB, a file with history (or damage) is rewritten at load; here
    // writes go on meanwhile, and a file holding just its documents is left as it is.
    if (this.needsRewrite()) {
      this.compact("dirty").catch((error: unknown) => {
        console.warn(`embedded store: compaction of ${this.name} at load failed:`, error);
      });
    }
  }

  private needsRewrite(): boolean {
    return this.fileStale || this.fileLines !== this.table.size + this.table.indexDefs().length;
  }

  /** Waits for the datafile to be loaded; refuses work once the store is closed. */
  private async open(): Promise<void> {
    assertOpen(this.state);
    if (!this.loaded) await this.ready;
  }

  /** Queues a line (without its newline) for the datafile. */
  private appendLine(line: string, owner?: Slot): void {
    if (this.appender === undefined) return;
    this.fileLines += 1;
    this.appender.enqueue(line, owner, owner === undefined ? 0 : this.table.versionOf(owner));
  }

  /** Queues a stored document's line: the slot learns where it went once it is appended. */
  private appendDoc(slot: Slot, doc: PlainObject): void {
    if (this.appender !== undefined) this.appendLine(serializeDoc(doc), slot);
  }

  /** Waits until this collection's writes so far are in its datafile (immediate in memory). */
  private persisted(): Promise<void> {
    return this.appender?.durable() ?? Promise.resolve();
  }

  async createIndexes(specs: readonly IndexSpec[]): Promise<void> {
    checkIndexSpecs(specs);
    await this.open();
    // Specs sharing a set of fields are one index (NeDB's rule, which the
    // datafile's index lines keep), unique if any of them is.
    const bySet = new Map<string, IndexDef>();
    for (const spec of specs) {
      const fields = Object.keys(spec.fields);
      if (fields.length === 1 && fields[0] === "_id") continue;
      const unique = spec.unique === true;
      const key = indexKey(fields);
      const seen = bySet.get(key);
      if (seen === undefined || (unique && !seen.unique)) bySet.set(key, { name: spec.name, fields, unique, arrayField: spec.arrayField });
      // See refuseArray. A compound index ending in `_id`, or with an arrayField, takes arrays where MongoDB does.
      if (fields.length > 1 && spec.arrayField === undefined && !fields.includes("_id")) {
        for (const field of fields) this.compoundFields.set(field, spec.name);
      }
    }
    for (const def of bySet.values()) {
      // A datafile whose index changed uniqueness is migrated rather than refused (MongoDB refuses: there it takes a migration).
      if (this.table.defineIndex(def)) this.appendLine(indexLine(rawIndex(def)));
    }
    await this.persisted();
  }

  async insertOne(doc: T): Promise<void> {
    const clean = checkDocument(doc) as PlainObject;
    await this.open();
    for (const [field, index] of this.compoundFields) this.refuseArray(field, index, readPath(clean, field));
    // checkDocument's copy becomes the stored document: nobody else holds it.
    this.appendDoc(this.table.insert(clean), clean);
    await this.persisted();
  }

  async insertMany(docs: readonly T[]): Promise<InsertManyResult> {
    const clean = checkBatch(docs, "insertMany") as PlainObject[];
    await this.open();
    for (const doc of clean) for (const [field, index] of this.compoundFields) this.refuseArray(field, index, readPath(doc, field));
    const duplicates: number[] = [];
    for (let i = 0; i < clean.length; i += 1) {
      const doc = clean[i]!;
      let slot: Slot;
      try {
        slot = this.table.insert(doc);
      } catch (error) {
        if (!(error instanceof DuplicateKeyError)) throw error;
        duplicates.push(i);
        continue;
      }
      this.appendDoc(slot, doc);
    }
    await this.persisted();
    return { inserted: clean.length - duplicates.length, duplicates };
  }

  async findOne(filter: Filter<T>): Promise<T | null> {
    checkFilter(filter as AnyFilter);
    await this.open();
    const slot = this.table.first(filter as AnyFilter, matchQuery(filter as AnyFilter));
    return slot === undefined ? null : copyDoc<T>(this.table.doc(slot));
  }

  async find(filter: Filter<T>, options?: FindOptions): Promise<T[]> {
    checkFilter(filter as AnyFilter);
    checkFindOptions(options);
    await this.open();
    const slots = this.table.select(filter as AnyFilter, matchQuery(filter as AnyFilter), {
      sort: options?.sort !== undefined && Object.keys(options.sort).length > 0 ? options.sort : undefined,
      limit: options?.limit,
    });
    return slots.map((slot) => copyDoc<T>(this.table.doc(slot)));
  }

  async count(filter: Filter<T>): Promise<number> {
    checkFilter(filter as AnyFilter);
    await this.open();
    return this.table.count(filter as AnyFilter, matchQuery(filter as AnyFilter));
  }

  async countBy(filter: Filter<T>, field: string): Promise<Map<string, number>> {
    checkFilter(filter as AnyFilter);
    await this.open();
    const counts = new Map<string, number>();
    for (const slot of this.table.select(filter as AnyFilter, matchQuery(filter as AnyFilter), {})) {
      const value = this.table.peek(slot)[field];
      const key = typeof value === "string" ? value : "";
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    return counts;
  }

  async updateOne(filter: Filter<T>, update: Update<T>): Promise<T | null> {
    checkFilter(filter as AnyFilter);
    const clean = normalizeUpdate(update as AnyUpdate);
    if (clean === null) return this.findOne(filter);
    this.refuseArrayUpdates(clean);
    await this.open();
    // From here to the write nothing awaits: no other operation can come in
    // between the match and the update (single-document atomicity, guarded updates).
    const slot = this.table.first(filter as AnyFilter, matchQuery(filter as AnyFilter));
    if (slot === undefined) return null;
    const current = this.table.doc(slot);
    const next = this.updated(current, clean);
    if (next !== current) {
      this.table.replace(slot, next);
      this.appendDoc(slot, next);
    }
    // Stored documents are never changed in place: `next` stays as it is after this update.
    await this.persisted();
    return copyDoc<T>(next);
  }

  async updateMany(filter: Filter<T>, update: Update<T>): Promise<number> {
    checkFilter(filter as AnyFilter);
    const clean = normalizeUpdate(update as AnyUpdate);
    if (clean === null) return this.count(filter);
    this.refuseArrayUpdates(clean);
    await this.open();
    const slots = this.table.select(filter as AnyFilter, matchQuery(filter as AnyFilter));
    for (const slot of slots) {
      const current = this.table.doc(slot);
      const next = this.updated(current, clean);
      if (next === current) continue;
      // A DuplicateKeyError leaves the documents changed before it changed (and written).
      this.table.replace(slot, next);
      this.appendDoc(slot, next);
    }
    await this.persisted();
    return slots.length;
  }

  async updateEach(updates: ReadonlyArray<FilteredUpdate<T>>): Promise<number[]> {
    const clean = checkUpdates(updates as ReadonlyArray<{ filter: AnyFilter; update: AnyUpdate }>);
    for (const { update } of clean) if (update !== null) this.refuseArrayUpdates(update);
    await this.open();
    // One pass with no await, then one wait for the append holding every line:
    // what updateMany costs once per call (its check of the store, its wait
    // for the append, its promise) is paid once for all.
    const matched = clean.map(({ filter, update }) => {
      const slots = this.table.select(filter, matchQuery(filter));
      if (update === null) return slots.length;
      for (const slot of slots) {
        const current = this.table.doc(slot);
        const next = this.updated(current, update);
        if (next === current) continue;
        // A DuplicateKeyError leaves the documents changed before it changed (and written).
        this.table.replace(slot, next);
        this.appendDoc(slot, next);
      }
      return slots.length;
    });
    await this.persisted();
    return matched;
  }

  /**
   * A document with an update applied (NeDB's modify: a new object), or the
   * document itself when the update does nothing to it. NeDB throws when
   * pulling from a missing field, MongoDB does nothing: such pulls are dropped.
   */
  private updated(doc: PlainObject, update: AnyUpdate): PlainObject {
    let effective: PlainObject = update as PlainObject;
    if (update.$pull !== undefined && pullsMissing(doc, update.$pull as PlainObject)) {
      const pulls = Object.entries(update.$pull).filter(([field]) => readPath(doc, field) !== undefined);
      effective = { ...update };
      if (pulls.length > 0) effective.$pull = Object.fromEntries(pulls);
      else delete effective.$pull;
      if (Object.keys(effective).length === 0) return doc;
    }
    return applyUpdate(doc, effective);
  }

  async upsertMany(docs: readonly T[], scope: Filter<T> = {} as Filter<T>): Promise<UpsertManyResult> {
    const clean = checkBatch(docs, "upsertMany") as PlainObject[];
    const fixed = checkUpsertScope(scope as AnyFilter);
    for (const [i, doc] of clean.entries()) {
      if (Object.keys(doc).length < 2) throw new TypeError(`upsertMany: document ${i} has no field besides _id`);
      for (const [field, index] of this.compoundFields) this.refuseArray(field, index, readPath(doc, field));
    }
    await this.open();
    const inScope = translateFilter(fixed);
    let inserted = 0;
    let updated = 0;
    const duplicates: number[] = [];
    for (let i = 0; i < clean.length; i += 1) {
      const { _id, ...fields } = clean[i]!;
      const slot = this.table.get(_id as string);
      try {
        const current = slot === undefined ? undefined : this.table.doc(slot);
        if (slot !== undefined && current !== undefined && nedbMatch(current, inScope)) {
          const next = applyUpdate(current, { $set: { ...fields, ...fixed } });
          this.table.replace(slot, next);
          this.appendDoc(slot, next);
          updated += 1;
        } else {
          // An `_id` held outside the scope clashes as the insert of MongoDB's upsert would.
          const doc: PlainObject = { _id, ...fields, ...fixed };
          this.appendDoc(this.table.insert(doc), doc);
          inserted += 1;
        }
      } catch (error) {
        if (!(error instanceof DuplicateKeyError)) throw error;
        duplicates.push(i);
      }
    }
    await this.persisted();
    return { inserted, updated, duplicates };
  }

  async deleteOne(filter: Filter<T>): Promise<boolean> {
    checkFilter(filter as AnyFilter);
    await this.open();
    const slot = this.table.first(filter as AnyFilter, matchQuery(filter as AnyFilter));
    if (slot === undefined) return false;
    // Its id before the slot is freed (its number may serve the next insert).
    const id = this.table.idOf(slot);
    this.table.remove(slot);
    this.appendLine(deletionLine(id));
    await this.persisted();
    return true;
  }

  async deleteMany(filter: Filter<T>): Promise<number> {
    checkFilter(filter as AnyFilter);
    await this.open();
    const slots = this.table.select(filter as AnyFilter, matchQuery(filter as AnyFilter));
    for (const slot of slots) {
      // Its id before the slot is freed (its number may serve the next insert).
      const id = this.table.idOf(slot);
      this.table.remove(slot);
      this.appendLine(deletionLine(id));
    }
    await this.persisted();
    return slots.length;
  }

  /** An array in a field of a compound index not declared its arrayField is refused, as MongoDB refuses one in two fields of an index (IndexSpec.arrayField). */
  private refuseArray(field: string, index: string, value: unknown): void {
    if (Array.isArray(value)) {
      throw new TypeError(
        `${this.name}: ${field} holds an array but is a field of compound index ${index}; declare it as that index's arrayField`,
      );
    }
  }

  private refuseArrayUpdates(update: AnyUpdate): void {
    const compound = this.compoundFields;
    if (compound.size === 0) return;
    // Looked up by each path of the update (not each compound field against every path: an entry and an array each).
    for (const op of ARRAY_OPERATORS) {
      const operand = update[op] as PlainObject | undefined;
      for (const path in operand) {
        const index = compound.get(path);
        if (index !== undefined) this.refuseArray(path, index, []);
      }
    }
    const set = update.$set as PlainObject | undefined;
    for (const path in set) {
      const value = set[path];
      const index = compound.get(path);
      if (index !== undefined) this.refuseArray(path, index, value);
      if (!isPlainObject(value)) continue;
      compound.forEach((inner, field) => {
        if (field.length > path.length && field.charCodeAt(path.length) === 46 && field.startsWith(path)) {
          this.refuseArray(field, inner, readPath(value, field.slice(path.length + 1)));
        }
      });
    }
  }

  /**
   * Rewrites the datafile from the live documents (Collection.compact), after
   * the writes made before the call. One rewrite at a time: a call while one
   * runs waits for the next, which every call made meanwhile shares (a burst
   * of erasures costs two rewrites, not one each). `dirty` (the timer, close)
   * skips a file that holds nothing but its live documents.
   */
  compact(mode: CompactMode = "always"): Promise<void> {
    if (this.filename === undefined) return Promise.resolve();
    if (this.compacting === undefined) {
      const run = this.compactNow(mode).finally(() => {
        if (this.compacting === run) this.compacting = undefined;
      });
      this.compacting = run;
      return run;
    }
    if (this.compactNext === undefined) {
      const next = this.compacting
        .catch(() => undefined)
        .then(() => {
          this.compactNext = undefined;
          return this.compact(mode);
        });
      this.compactNext = next;
    }
    return this.compactNext;
  }

  private async compactNow(mode: CompactMode): Promise<void> {
    if (!this.loaded) await this.ready;
    if (mode === "dirty" && !this.needsRewrite()) return this.persisted();
    // The snapshot, and the appender told of it, with no await in between:
    // writes go on while the file is rewritten (GroupAppender.rewrite).
    const docs = this.table.snapshot();
    const indexLines = this.table.indexDefs().map((def) => indexLine(rawIndex(def)));
    const before = this.fileLines;
    this.fileLines = docs.length + indexLines.length;
    this.fileStale = false;
    this.rewrites += 1;
    const reader = this.reader!;
    const appender = this.appender!;
    // Right after the rename, before anything else runs: every slot whose
    // line moved is told where it is now, and reads go to the new file.
    const renamed = (size: number, tailAt: number, tail: readonly TailLines[]): void => {
      for (const entry of docs) this.table.placed(entry.slot, entry.version, entry.newAt, entry.newLen);
      let at = tailAt;
      for (const batch of tail as readonly AppendedBatch[]) {
        for (let i = 0; i < batch.lines.length; i += 1) {
          const owner = batch.owners[i];
          if (owner !== undefined) this.table.placed(owner, batch.versions[i]!, at, batch.bytes[i]! - 1);
          at += batch.bytes[i]!;
        }
      }
      reader.reopen();
      appender.size = size;
    };
    try {
      await appender.rewrite((commit) =>
        rewriteDatafile(this.filename!, docs, (at, len) => reader.bytes(at, len), indexLines, commit, renamed),
      );
    } catch (error) {
      // The old file stays, with every line appended since.
      this.fileLines += before - docs.length - indexLines.length;
      this.fileStale = true;
      throw error;
    }
    // And the lines held during the rename (close() releases the directory after this).
    await this.persisted();
  }

  /** Rewrites of the datafile so far (for tests). */
  rewrites = 0;

  /** Appends to the datafile so far, each carrying the lines of one or more writes (for tests). */
  get appends(): number {
    return this.appender?.appends ?? 0;
  }

  /** Documents read from the datafile so far, not being in memory (for tests). */
  get reads(): number {
    return this.reader?.reads ?? 0;
  }

  /** Closes the datafile (store close, after the last compaction). */
  async closeFile(): Promise<void> {
    await this.appender?.close();
    this.reader?.close();
  }
}

/** An index definition as its datafile line holds it: NeDB's fields, and ours. */
function rawIndex(def: IndexDef): RawIndex {
  return {
    fieldName: indexKey(def.fields),
    unique: def.unique,
    sparse: def.sparse === true,
    ...(def.name !== undefined ? { name: def.name } : {}),
    fields: def.fields,
    ...(def.arrayField !== undefined ? { arrayField: def.arrayField } : {}),
  };
}

/** The update operators that add to an array. */
const ARRAY_OPERATORS = ["$addToSet", "$push"] as const;

/** Whether a `$pull` names a field the document lacks (updated() then drops it). */
function pullsMissing(doc: PlainObject, pull: PlainObject): boolean {
  for (const field in pull) if (readPath(doc, field) === undefined) return true;
  return false;
}

/** Value at a dotted path through nested objects' own fields; undefined if any step is missing. */
function readPath(doc: PlainObject, fieldPath: string): unknown {
  // A top-level field (each compound index's field, for each inserted document): no split.
  if (!fieldPath.includes(".")) return Object.prototype.hasOwnProperty.call(doc, fieldPath) ? doc[fieldPath] : undefined;
  let current: unknown = doc;
  for (const part of fieldPath.split(".")) {
    if (current === undefined || current === null) return undefined;
    if (!isPlainObject(current)) return current; // an array or scalar on the way: let NeDB decide
    if (!Object.prototype.hasOwnProperty.call(current, part)) return undefined;
    current = current[part];
  }
  return current;
}

// ---------------------------------------------------------------------------
// Filter translation. NeDB's query language is MongoDB's with these differences,
// each adapted here:
//  - no `$eq`: plain equality instead;
//  - `null` does not match a missing field: add an explicit `$exists: false`;
//  - on array fields NeDB tests every operator against any element, so `$ne` and
//    `$nin` mean "some element differs": use `$not` of the positive condition,
//    which means "no element matches", as in MongoDB;
//  - `$exists: true` is false on an empty array: use `$not` of `$exists: false`;
//  - an operator object is matched as a whole against one array element, whereas
//    MongoDB lets each operator match a different element: split operators into
//    separate clauses;
//  - NeDB reads `obj[name]`, which finds inherited names (`constructor`,
//    `toString`, a string's `length` or characters) that MongoDB never sees as
//    fields: a path that could reach one is matched on its own-fields value
//    (own-path.ts) through `$where`.
// Simple clauses stay top-level keys of the query, the rest goes into `$and`
// (the store plans its index lookups from the port's filter, not from this).
// ---------------------------------------------------------------------------

type NedbQuery = PlainObject;

/** A stored document with a (cleaned) update applied: a new object, as NeDB's modify makes. */
function applyUpdate(doc: PlainObject, update: PlainObject): PlainObject {
  const shallow = shallowSet(doc, update);
  if (shallow !== undefined) return shallow;
  // modify deep-copies key by key (and deletes for $unset): its result would be kept as a hash table of fields.
  const modified = modify(doc, update);
  return withFastFields(modified, Object.keys(modified).length);
}

/**
 * NeDB's modify for the common update, `$set`, `$inc` and `$push` of top-level
 * fields (`$inc` of a number or a missing field, `$push` onto an array or a
 * missing field): a shallow copy with the fields assigned, where modify
 * deep-copies the whole document first (an email's status change is a `$set`
 * with a `$push` onto its history, once per email sent). Sharing the untouched
 * values is safe because stored documents are never changed in place (the
 * update's own values are cleaned copies, see normalizeUpdate; a pushed-to
 * array is a new array). Undefined for any other update: modify then applies
 * (and refuses) it.
 */
function shallowSet(doc: PlainObject, update: PlainObject): PlainObject | undefined {
  const set = update.$set as PlainObject | undefined;
  const inc = update.$inc as Record<string, number> | undefined;
  const push = update.$push as Record<string, { $each: unknown[] }> | undefined;
  let ops = 0;
  if (set !== undefined) ops += 1;
  if (inc !== undefined) ops += 1;
  if (push !== undefined) ops += 1;
  if (ops === 0) return undefined;
  for (const op in update) if (op !== "$set" && op !== "$inc" && op !== "$push") return undefined;
  for (const field in set) if (field.includes(".")) return undefined;
  for (const field in inc) {
    if (field.includes(".")) return undefined;
    const current = doc[field];
    if (typeof current !== "number" && (current !== undefined || Object.prototype.hasOwnProperty.call(doc, field))) return undefined;
  }
  for (const field in push) {
    if (field.includes(".")) return undefined;
    const current = doc[field];
    if (!Array.isArray(current) && (current !== undefined || Object.prototype.hasOwnProperty.call(doc, field))) return undefined;
  }
  // A field the document lacked, assigned by a computed key, may turn the copy into a hash table of its
  // fields (about 1.5 KB more for an email record: delivery's cached records after their send's $set),
  // which a second spread laid out inline again. `$set`'s new fields are spread in with the document's
  // instead: one copy, inline (V8 keeps a literal of two spreads fast).
  let setAdds = false;
  for (const field in set) {
    if (!Object.prototype.hasOwnProperty.call(doc, field)) {
      setAdds = true;
      break;
    }
  }
  const next: PlainObject = setAdds ? { ...doc, ...set } : { ...doc };
  if (!setAdds) for (const field in set) next[field] = set[field];
  // `$inc` or `$push` of a missing field: assigned, then spread again below.
  let added = false;
  for (const field in inc) {
    const current = next[field];
    if (current === undefined) added = true;
    next[field] = typeof current === "number" ? current + inc[field]! : inc[field]!;
  }
  for (const field in push) {
    const current = next[field] as unknown[] | undefined;
    if (current === undefined) added = true;
    next[field] = current === undefined ? [...push[field]!.$each] : current.concat(push[field]!.$each);
  }
  // Spread again: V8 lays a hash-table object's fields out inline (see withFastFields).
  return added ? { ...next } : next;
}

/**
 * The query the table matches its candidates against: the whole filter,
 * except an `_id` condition the candidates already are (idLookupIsExact).
 */
function matchQuery(filter: AnyFilter): NedbQuery {
  // Equalities to strings, numbers and booleans on plain fields are their own
  // translation (an exact `_id` among them matched again, harmlessly): most
  // writes' filters, which need no copy then. The caller's filter object is
  // only read, and only before the operation returns to its caller.
  if (onlyPlainEqualities(filter)) return filter as NedbQuery;
  return translate(filter, idLookupIsExact(filter._id));
}

/** Whether every condition of a (checked) filter is equality to a string, number or boolean on a field read plainly: what translateFilter would answer is the filter itself. */
function onlyPlainEqualities(filter: AnyFilter): boolean {
  for (const field in filter) {
    const condition = filter[field];
    if (typeof condition !== "string" && typeof condition !== "number" && typeof condition !== "boolean") return false;
    if (reachesInherited(field)) return false;
  }
  return true;
}

export function translateFilter(filter: AnyFilter): NedbQuery {
  return translate(filter, false);
}

/** translateFilter, without the filter's `_id` when `skipId` (matchQuery: the candidates are those ids already). */
function translate(filter: AnyFilter, skipId: boolean): NedbQuery {
  const query: NedbQuery = {};
  let and: NedbQuery[] | undefined;
  for (const field in filter) {
    if (skipId && field === "_id") continue;
    const condition = filter[field];
    if (field === "$or") {
      (and ??= []).push({ $or: (condition as AnyFilter[]).map(translateFilter) });
      continue;
    }
    if (reachesInherited(field)) {
      (and ??= []).push(ownFieldCondition(field, condition));
      continue;
    }
    // Equality to a value other than null: the clause `{ [field]: value }` (equals), kept at the top when it can be.
    if (condition !== null && !isPlainObject(condition) && !(field in query)) {
      query[field] = condition;
      continue;
    }
    for (const clause of translateCondition(field, condition)) {
      let key: string | undefined;
      for (const first in clause) {
        key = first;
        break;
      }
      if (key !== undefined && !key.startsWith("$") && !(key in query)) Object.assign(query, clause);
      else (and ??= []).push(clause);
    }
  }
  if (and !== undefined) query.$and = and;
  return query;
}

function translateCondition(field: string, condition: unknown): NedbQuery[] {
  if (!isPlainObject(condition)) return [equals(field, condition)];
  const clauses: NedbQuery[] = [];
  for (const [op, operand] of Object.entries(condition)) {
    switch (op) {
      case "$eq":
        clauses.push(equals(field, operand));
        break;
      case "$ne":
        clauses.push({ $not: equals(field, operand) });
        break;
      case "$in":
        clauses.push(inList(field, operand as unknown[]));
        break;
      case "$nin":
        clauses.push({ $not: inList(field, operand as unknown[]) });
        break;
      case "$all":
        // Each value its own clause: on an array field NeDB's equality holds when an element equals.
        for (const value of operand as unknown[]) clauses.push(equals(field, value));
        break;
      case "$exists":
        clauses.push(operand === true ? { $not: { [field]: { $exists: false } } } : { [field]: { $exists: false } });
        break;
      default: // $gt, $gte, $lt, $lte
        clauses.push({ [field]: { [op]: operand } });
    }
  }
  return clauses;
}

/** Where ownFieldCondition puts the value it read, for NeDB to match. */
const OWN_VALUE = "v";

/**
 * A condition on a path NeDB would read through inherited properties: NeDB's
 * own matching of the condition, against the value read through own fields
 * only, so that every operator keeps its meaning (arrays included).
 */
function ownFieldCondition(field: string, condition: unknown): NedbQuery {
  const clauses = translateCondition(OWN_VALUE, condition);
  const query = clauses.length === 1 ? clauses[0]! : { $and: clauses };
  return {
    $where(this: PlainObject): boolean {
      return nedbMatch({ [OWN_VALUE]: ownPathValue(this, field) }, query);
    },
  };
}

function equals(field: string, value: unknown): NedbQuery {
  if (value === null) return { $or: [{ [field]: null }, { [field]: { $exists: false } }] };
  return { [field]: value };
}

function inList(field: string, values: unknown[]): NedbQuery {
  const clause = { [field]: { $in: values } };
  return values.includes(null) ? { $or: [clause, { [field]: { $exists: false } }] } : clause;
}
