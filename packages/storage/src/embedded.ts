// The embedded document store: NeDB (@seald-io/nedb), one append-only datafile
// per collection under `dataDir`, or memory only for unit tests. It serves the
// same port as MongoDB so that `npm start` needs no server; the translation below
// makes NeDB answer as MongoDB would wherever the two languages differ.

/// <reference path="./nedb-model.d.ts" />
import { mkdir } from "node:fs/promises";
import * as path from "node:path";
import { lockDir, type DirLock } from "@emailsvc/dir-lock";
import Datastore from "@seald-io/nedb";
import { deepCopy, match as nedbMatch, serialize } from "@seald-io/nedb/lib/model.js";
import {
  checkBatch,
  checkCollectionName,
  checkDocument,
  checkFilter,
  checkFindOptions,
  checkIndexSpecs,
  checkUpsertScope,
  isPlainObject,
  normalizeUpdate,
  type PlainObject,
} from "./checks.js";
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
  type Update,
  type UpsertManyResult,
} from "./types.js";
import { GroupAppender } from "./group-append.js";

export interface EmbeddedStoreOptions {
  /** Directory of the datafiles, created if missing; memory only when undefined. */
  dataDir?: string | undefined;
  /** How often datafiles are compacted while open (NeDB only appends); default 10 minutes. */
  compactionIntervalMs?: number;
}

const DEFAULT_COMPACTION_INTERVAL_MS = 10 * 60 * 1000;

export function openEmbeddedStore(options: EmbeddedStoreOptions = {}): Promise<EmbeddedDocumentStore> {
  return EmbeddedDocumentStore.open(options);
}

// NeDB keeps every document in memory and rewrites its datafile on load and on
// compaction, so two Datastores on one file silently overwrite each other's
// writes. Another process is kept out of a directory by its lock file
// (@emailsvc/dir-lock); within this process, stores may share a directory (tests
// reopen one while another is open) but each datafile belongs to one open store
// at a time.

/** Directories locked by this process, with how many open stores use each. */
const lockedDirs = new Map<string, { stores: number; locked: Promise<DirLock> }>();
/** Datafiles held by an open store of this process. */
const openDatafiles = new Set<string>();

async function acquireDir(dir: string): Promise<void> {
  let entry = lockedDirs.get(dir);
  if (entry === undefined) {
    entry = { stores: 0, locked: lockDir(dir, "embedded store") };
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

  /** Creates and locks the directory (if any) before the first datafile is read. */
  static async open(options: EmbeddedStoreOptions = {}): Promise<EmbeddedDocumentStore> {
    if (options.dataDir === undefined) return new EmbeddedDocumentStore(undefined, options);
    const dir = path.resolve(options.dataDir);
    await mkdir(dir, { recursive: true });
    await acquireDir(dir);
    return new EmbeddedDocumentStore(dir, options);
  }

  private constructor(
    private readonly dataDir: string | undefined,
    options: EmbeddedStoreOptions,
  ) {
    if (dataDir !== undefined) {
      // Our own timer rather than NeDB's: NeDB's keeps the process alive and
      // leaves a failed compaction as an unhandled rejection.
      this.compactionTimer = setInterval(() => {
        for (const collection of this.collections.values()) {
          collection.compact().catch((error: unknown) => {
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
      collection = new EmbeddedCollection<Doc>(name, filename, this.state);
      this.collections.set(name, collection);
    }
    return collection as unknown as Collection<T>;
  }

  async ping(): Promise<boolean> {
    return !this.state.closed;
  }

  /** Waits for pending writes, compacts every datafile and releases the directory. */
  async close(): Promise<void> {
    if (this.state.closed) return;
    this.state.closed = true;
    if (this.compactionTimer !== undefined) clearInterval(this.compactionTimer);
    try {
      await Promise.all([...this.collections.values()].map((collection) => collection.compact()));
    } finally {
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

/** The parts of a NeDB index we read; `indexes` is public but not in NeDB's typings. */
interface NedbIndex {
  fieldName: string;
  unique: boolean;
}

type NedbQuery = PlainObject;

/** A node of NeDB's index trees (an AVL tree of @seald-io/binary-search-tree): a key with its documents. */
interface TreeNode {
  key?: unknown;
  data: PlainObject[];
  left?: TreeNode | null;
  right?: TreeNode | null;
}

/**
 * The documents of an `_id` index tree in key order (descending: reversed),
 * after `bound` (descending: before it), lazily: a page stops the walk.
 */
function* walkInOrder(node: TreeNode | null | undefined, bound: string | undefined, descending: boolean): Generator<PlainObject> {
  if (!node || !Object.prototype.hasOwnProperty.call(node, "key")) return;
  const key = node.key as string;
  const inRange = bound === undefined || (descending ? key < bound : key > bound);
  if (inRange) yield* walkInOrder(descending ? node.right : node.left, bound, descending);
  if (inRange) yield* node.data;
  yield* walkInOrder(descending ? node.left : node.right, bound, descending);
}

/** The parts of NeDB's persistence we replace or read (not in its typings). */
interface NedbPersistence {
  modes: { fileMode: number };
  persistNewStateAsync(docs: PlainObject[]): Promise<void>;
}

class EmbeddedCollection<T extends Doc> implements Collection<T> {
  private readonly db: Datastore<PlainObject>;
  private readonly ready: Promise<void>;
  /** Our index names by NeDB's key for them (the sorted field list, comma-joined). */
  private readonly indexNames = new Map<string, string>([["_id", "_id_"]]);
  /** Fields of the compound indexes created here, with the index's name: they must never hold arrays (IndexSpec.arrayField). */
  private readonly compoundFields = new Map<string, string>();
  /** Tail of the chain that runs this collection's updates one at a time. */
  private updates: Promise<unknown> = Promise.resolve();
  /** Appends this collection's writes to its datafile, many writes per append (group-append.ts). */
  private readonly appender: GroupAppender | undefined;
  /** The rewrite of the datafile running now, and the one asked for while it runs (compact()). */
  private compacting: Promise<void> | undefined;
  private compactNext: Promise<void> | undefined;

  constructor(
    readonly name: string,
    /** The datafile; memory only when undefined. */
    readonly filename: string | undefined,
    private readonly state: StoreState,
  ) {
    this.db = new Datastore<PlainObject>(filename === undefined ? { inMemoryOnly: true } : { filename });
    if (filename !== undefined) {
      const persistence = (this.db as unknown as { persistence: NedbPersistence }).persistence;
      const appender = new GroupAppender(filename, persistence.modes.fileMode, (error) => {
        console.error(`embedded store: appending to ${filename} failed; writes since are in memory only:`, error);
      });
      // NeDB calls this inside each write, before it runs the next one: queue the
      // lines instead of appending them, and let the write's caller wait (persisted()).
      persistence.persistNewStateAsync = async (docs) => {
        let lines = "";
        for (const doc of docs) lines += `${serialize(doc)}\n`;
        appender.enqueue(lines);
      };
      this.appender = appender;
    }
    this.ready = this.db.loadDatabaseAsync();
    // A failed load is reported by every operation that awaits `ready`.
    this.ready.catch(() => undefined);
  }

  async createIndexes(specs: readonly IndexSpec[]): Promise<void> {
    checkIndexSpecs(specs);
    await this.open();
    // NeDB indexes ignore direction and field order, so NeDB knows an index by its
    // set of fields: specs sharing one become one index, unique if any of them is.
    const bySet = new Map<string, { fields: string[]; unique: boolean; name: string }>();
    for (const spec of specs) {
      let fields = Object.keys(spec.fields);
      // NeDB picks a compound index only for a query naming every field with
      // equality, and a query with `_id` equality always takes the `_id` index
      // first: a compound index with `_id` in it is never used, and unique
      // through `_id` anyway. Kept, it costs every write a walk of its tree
      // (compared field by field), for nothing. Served here by the `_id` walk
      // of findPage and by scans; MongoDB builds it as declared.
      if (fields.length > 1 && fields.includes("_id")) {
        const stale = [...fields].sort().join(",");
        if (this.nedbIndexes()[stale] !== undefined) await this.db.removeIndexAsync(stale);
        continue;
      }
      if (spec.arrayField !== undefined && fields.length > 1) {
        // NeDB keys a compound index by whole values: a document whose field is
        // an array is never found through it. Index the array field alone (NeDB
        // indexes each element), and drop the compound one a datafile may keep
        // from before the field was declared.
        const compound = [...fields].sort().join(",");
        if (this.nedbIndexes()[compound] !== undefined) await this.db.removeIndexAsync(compound);
        fields = [spec.arrayField];
      } else if (fields.length > 1) {
        for (const field of fields) this.compoundFields.set(field, spec.name);
      }
      const key = [...fields].sort().join(",");
      const unique = spec.unique === true;
      const seen = bySet.get(key);
      if (seen === undefined) bySet.set(key, { fields, unique, name: spec.name });
      else if (unique && !seen.unique) bySet.set(key, { fields, unique, name: spec.name });
    }
    for (const [key, { fields, unique, name }] of bySet) {
      // A datafile whose index changed uniqueness is migrated rather than refused
      // (MongoDB refuses: there it takes a migration).
      const existing = this.nedbIndexes()[key];
      if (existing !== undefined && existing.unique !== unique) await this.db.removeIndexAsync(key);
      try {
        await this.db.ensureIndexAsync({ fieldName: fields.length === 1 ? key : fields, unique });
      } catch (error) {
        if (isUniqueViolation(error)) throw new DuplicateKeyError(name);
        throw error;
      }
      this.indexNames.set(key, name);
    }
    await this.persisted();
  }

  async insertOne(doc: T): Promise<void> {
    const clean = checkDocument(doc);
    await this.open();
    for (const [field, index] of this.compoundFields) this.refuseArray(field, index, readPath(clean, field));
    try {
      await this.db.insertAsync(clean);
    } catch (error) {
      throw await this.mapError(error, clean);
    }
    await this.persisted();
  }

  async insertMany(docs: readonly T[]): Promise<InsertManyResult> {
    const clean = checkBatch(docs, "insertMany");
    await this.open();
    for (const doc of clean) for (const [field, index] of this.compoundFields) this.refuseArray(field, index, readPath(doc, field));
    // One NeDB insert per document (NeDB's array insert is all or nothing on a
    // clash), queued together so that their lines share the append.
    const outcomes = await Promise.all(
      clean.map((doc) =>
        this.db.insertAsync(doc).then(
          () => true,
          async (error: unknown) => {
            if (isUniqueViolation(error)) return false;
            throw error;
          },
        ),
      ),
    );
    await this.persisted();
    const duplicates = outcomes.flatMap((inserted, i) => (inserted ? [] : [i]));
    return { inserted: clean.length - duplicates.length, duplicates };
  }

  async findOne(filter: Filter<T>): Promise<T | null> {
    checkFilter(filter as AnyFilter);
    await this.open();
    const found = (await this.db.findOneAsync(translateFilter(filter as AnyFilter))) as unknown as T | null;
    return found ?? null;
  }

  async find(filter: Filter<T>, options?: FindOptions): Promise<T[]> {
    checkFilter(filter as AnyFilter);
    checkFindOptions(options);
    await this.open();
    const query = translateFilter(filter as AnyFilter);
    const page = this.pageInIdOrder(filter as AnyFilter, query, options);
    if (page !== undefined) return page as unknown as T[];
    let cursor = this.db.findAsync(query);
    if (options?.sort !== undefined && Object.keys(options.sort).length > 0) cursor = cursor.sort(options.sort);
    if (options?.limit !== undefined) cursor = cursor.limit(options.limit);
    return (await cursor) as unknown as T[];
  }

  /**
   * A page in `_id` order (a list after its cursor, an audience after its
   * resume point) by walking NeDB's `_id` index in order from the cursor and
   * stopping once the page is full. NeDB itself would take every candidate of
   * the query, match and sort them all for each page: a walk over 100,000
   * documents in pages grows with the square of their number. Gives up (and
   * NeDB answers) when the query matches too few of the documents walked for
   * the walk to be the cheaper way; undefined then, or when the query is no
   * such page.
   */
  private pageInIdOrder(filter: AnyFilter, query: NedbQuery, options: FindOptions | undefined): PlainObject[] | undefined {
    const sortKeys = Object.keys(options?.sort ?? {});
    if (options?.limit === undefined || sortKeys.length !== 1 || sortKeys[0] !== "_id") return undefined;
    const descending = options.sort!._id === -1;
    const idCondition = filter._id;
    const bound = isPlainObject(idCondition) ? (descending ? (idCondition as PlainObject).$lt : (idCondition as PlainObject).$gt) : undefined;
    // Index.tree is an AVLTree wrapper whose `tree` is the root node (replaced on rebalancing).
    const tree = (this.db as unknown as { indexes: { _id: { tree: { tree: TreeNode } } } }).indexes._id.tree.tree;
    const page: PlainObject[] = [];
    const budget = Math.max(2000, options.limit * 20);
    let walked = 0;
    for (const doc of walkInOrder(tree, typeof bound === "string" ? bound : undefined, descending)) {
      if (++walked > budget) return undefined;
      if (!nedbMatch(doc, query)) continue;
      page.push(deepCopy(doc) as PlainObject);
      if (page.length === options.limit) break;
    }
    return page;
  }

  async count(filter: Filter<T>): Promise<number> {
    checkFilter(filter as AnyFilter);
    await this.open();
    return (await this.db.countAsync(translateFilter(filter as AnyFilter))) as unknown as number;
  }

  async updateOne(filter: Filter<T>, update: Update<T>): Promise<T | null> {
    checkFilter(filter as AnyFilter);
    const clean = normalizeUpdate(update as AnyUpdate);
    if (clean === null) return this.findOne(filter);
    this.refuseArrayUpdates(clean);
    const result = await this.inUpdateChain(() => this.applyUpdate(filter as AnyFilter, clean));
    await this.persisted();
    return result;
  }

  async updateMany(filter: Filter<T>, update: Update<T>): Promise<number> {
    checkFilter(filter as AnyFilter);
    const clean = normalizeUpdate(update as AnyUpdate);
    if (clean === null) return this.count(filter);
    this.refuseArrayUpdates(clean);
    const matched = await this.inUpdateChain(async () => {
      await this.open();
      const query = translateFilter(filter as AnyFilter);
      if (clean.$pull !== undefined) {
        // NeDB's $pull throws on a missing field (see applyUpdate): one document at a time.
        const ids = ((await this.db.findAsync(query, { _id: 1 })) as Array<{ _id: string }>).map((doc) => doc._id);
        for (const _id of ids) await this.applyUpdate({ _id }, clean);
        return ids.length;
      }
      try {
        return (await this.db.updateAsync(query, clean as PlainObject, { multi: true, upsert: false })).numAffected;
      } catch (error) {
        throw await this.mapError(error, undefined);
      }
    });
    await this.persisted();
    return matched;
  }

  async upsertMany(docs: readonly T[], scope: Filter<T> = {} as Filter<T>): Promise<UpsertManyResult> {
    const clean = checkBatch(docs, "upsertMany");
    const fixed = checkUpsertScope(scope as AnyFilter);
    for (const [i, doc] of clean.entries()) {
      if (Object.keys(doc).length < 2) throw new TypeError(`upsertMany: document ${i} has no field besides _id`);
      for (const [field, index] of this.compoundFields) this.refuseArray(field, index, readPath(doc, field));
    }
    const outcomes = await this.inUpdateChain(async () => {
      await this.open();
      // Queued together, one NeDB update each: their lines share the append.
      return Promise.all(
        clean.map((doc) => {
          const { _id, ...fields } = doc as PlainObject;
          return this.db.updateAsync({ ...fixed, _id }, { $set: { ...fields, ...fixed } }, { upsert: true }).then(
            (result) => (result.upsert ? "inserted" : "updated"),
            (error: unknown) => {
              if (isUniqueViolation(error)) return "duplicate";
              throw error;
            },
          );
        }),
      );
    });
    await this.persisted();
    const duplicates = outcomes.flatMap((outcome, i) => (outcome === "duplicate" ? [i] : []));
    return {
      inserted: outcomes.filter((outcome) => outcome === "inserted").length,
      updated: outcomes.filter((outcome) => outcome === "updated").length,
      duplicates,
    };
  }

  /** Runs `task` after every update queued before it, and before those queued after. */
  private inUpdateChain<R>(task: () => Promise<R>): Promise<R> {
    const run = this.updates.then(task);
    this.updates = run.catch(() => undefined);
    return run;
  }

  /** Waits until this collection's writes so far are in its datafile (immediate in memory). */
  private persisted(): Promise<void> {
    return this.appender?.durable() ?? Promise.resolve();
  }

  /**
   * Runs inside the update chain, so no other update of this collection can
   * interleave between the read and the write of the `$pull` path below.
   */
  private async applyUpdate(filter: AnyFilter, update: AnyUpdate): Promise<T | null> {
    await this.open();
    let query = translateFilter(filter as AnyFilter);
    let nedbUpdate: PlainObject = { ...update };
    if (update.$pull !== undefined) {
      // NeDB throws when pulling from a missing field, MongoDB does nothing: read
      // the document, drop those pulls, and update exactly that document.
      const current = (await this.db.findOneAsync(query)) as unknown as T | null;
      if (current === null) return null;
      const pulls = Object.entries(update.$pull).filter(([field]) => readPath(current, field) !== undefined);
      if (pulls.length > 0) nedbUpdate.$pull = Object.fromEntries(pulls);
      else delete nedbUpdate.$pull;
      if (Object.keys(nedbUpdate).length === 0) return current;
      query = { _id: current._id };
    }
    try {
      const result = await this.db.updateAsync(query, nedbUpdate, {
        multi: false,
        upsert: false,
        returnUpdatedDocs: true,
      });
      return (result.affectedDocuments as unknown as T | null | undefined) ?? null;
    } catch (error) {
      throw await this.mapError(error, undefined);
    }
  }

  async deleteOne(filter: Filter<T>): Promise<boolean> {
    checkFilter(filter as AnyFilter);
    await this.open();
    const removed = await this.db.removeAsync(translateFilter(filter as AnyFilter), { multi: false });
    await this.persisted();
    return removed > 0;
  }

  async deleteMany(filter: Filter<T>): Promise<number> {
    checkFilter(filter as AnyFilter);
    await this.open();
    const removed = await this.db.removeAsync(translateFilter(filter as AnyFilter), { multi: true });
    await this.persisted();
    return removed;
  }

  /** An array in a field of a compound index would make NeDB's lookups through it miss the document (IndexSpec.arrayField). */
  private refuseArray(field: string, index: string, value: unknown): void {
    if (Array.isArray(value)) {
      throw new TypeError(
        `${this.name}: ${field} holds an array but is a field of compound index ${index}; declare it as that index's arrayField`,
      );
    }
  }

  private refuseArrayUpdates(update: AnyUpdate): void {
    for (const [field, index] of this.compoundFields) {
      if (update.$addToSet?.[field] !== undefined || update.$push?.[field] !== undefined) this.refuseArray(field, index, []);
      for (const [path, value] of Object.entries(update.$set ?? {})) {
        if (path === field) this.refuseArray(field, index, value);
        else if (field.startsWith(`${path}.`) && isPlainObject(value)) this.refuseArray(field, index, readPath(value, field.slice(path.length + 1)));
      }
    }
  }

  /**
   * Rewrites the datafile from the live documents (Collection.compact), after
   * the writes queued before the call. One rewrite at a time: a call while one
   * runs waits for the next, which every call made meanwhile shares (a burst
   * of erasures costs two rewrites, not one each).
   */
  compact(): Promise<void> {
    if (this.filename === undefined) return Promise.resolve();
    if (this.compacting === undefined) {
      const run = this.compactNow().finally(() => {
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
          return this.compact();
        });
      this.compactNext = next;
    }
    return this.compactNext;
  }

  private async compactNow(): Promise<void> {
    await this.ready;
    // Queued lines first, so that the rewrite is not followed by older states.
    await this.persisted().catch(() => undefined);
    await this.db.compactDatafileAsync();
  }

  /** Waits for the datafile to be loaded; refuses work once the store is closed. */
  private async open(): Promise<void> {
    assertOpen(this.state);
    await this.ready;
  }

  private nedbIndexes(): Record<string, NedbIndex> {
    return (this.db as unknown as { indexes: Record<string, NedbIndex> }).indexes;
  }

  private async mapError(error: unknown, doc: PlainObject | undefined): Promise<unknown> {
    if (!isUniqueViolation(error)) return error;
    return new DuplicateKeyError(await this.violatedIndex(error.key, doc));
  }

  /**
   * NeDB reports the clashing key but not the index. A compound key is an object
   * of its fields, which names the index; a single value is looked up in the
   * document being inserted, or else in the collection (the holder of the value
   * is still there, since the failed write changed nothing).
   */
  private async violatedIndex(key: unknown, doc: PlainObject | undefined): Promise<string | undefined> {
    const unique = Object.values(this.nedbIndexes()).filter((index) => index.unique);
    if (isPlainObject(key)) {
      const fields = Object.keys(key).sort().join(",");
      if (unique.some((index) => index.fieldName === fields)) return this.indexNames.get(fields);
    }
    // An update cannot change _id, so only an insert can clash on it.
    let candidates = unique.filter(
      (index) => !index.fieldName.includes(",") && (doc !== undefined || index.fieldName !== "_id"),
    );
    if (doc !== undefined) {
      candidates = candidates.filter((index) => {
        const value = readPath(doc, index.fieldName);
        return value === key || (Array.isArray(value) && value.includes(key));
      });
    }
    if (candidates.length > 1) {
      const holders: NedbIndex[] = [];
      for (const index of candidates) {
        if ((await this.db.countAsync({ [index.fieldName]: key })) > 0) holders.push(index);
      }
      candidates = holders;
    }
    const index = candidates[0];
    return candidates.length === 1 && index !== undefined ? this.indexNames.get(index.fieldName) : undefined;
  }
}

function isUniqueViolation(error: unknown): error is Error & { key: unknown } {
  return error instanceof Error && (error as { errorType?: unknown }).errorType === "uniqueViolated";
}

/** Value at a dotted path through nested objects; undefined if any step is missing. */
function readPath(doc: PlainObject, fieldPath: string): unknown {
  let current: unknown = doc;
  for (const part of fieldPath.split(".")) {
    if (current === undefined || current === null) return undefined;
    if (!isPlainObject(current)) return current; // an array or scalar on the way: let NeDB decide
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
//    separate clauses.
// Simple clauses stay top-level keys of the query so NeDB can use its indexes;
// the rest goes into `$and`.
// ---------------------------------------------------------------------------

export function translateFilter(filter: AnyFilter): NedbQuery {
  const query: NedbQuery = {};
  const and: NedbQuery[] = [];
  const add = (clause: NedbQuery): void => {
    const [key] = Object.keys(clause);
    if (key !== undefined && !key.startsWith("$") && !(key in query)) Object.assign(query, clause);
    else and.push(clause);
  };
  for (const [field, condition] of Object.entries(filter)) {
    if (field === "$or") {
      and.push({ $or: (condition as AnyFilter[]).map(translateFilter) });
      continue;
    }
    for (const clause of translateCondition(field, condition)) add(clause);
  }
  if (and.length > 0) query.$and = and;
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

function equals(field: string, value: unknown): NedbQuery {
  if (value === null) return { $or: [{ [field]: null }, { [field]: { $exists: false } }] };
  return { [field]: value };
}

function inList(field: string, values: unknown[]): NedbQuery {
  const clause = { [field]: { $in: values } };
  return values.includes(null) ? { $or: [clause, { [field]: { $exists: false } }] } : clause;
}
