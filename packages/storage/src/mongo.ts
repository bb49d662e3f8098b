// The MongoDB adapter, on the official driver. It uses only what FerretDB v1 also
// serves (CI runs on it): no collation, transactions, change streams or TTL
// indexes, and `$pull` by exact value (enforced by the shared checks).
//
// FerretDB v1.24 (on PostgreSQL, as CI runs it) differs from MongoDB in ways
// measured by the contract tests and bench/mongo-probe, each handled here:
//  - updates are read-modify-write without isolation, on every backend
//    (FerretDB reads the matching documents, applies the operators in Go and
//    writes the whole document back by _id): concurrent `$inc`s are lost and
//    two guarded updates can both win. When the server is FerretDB this adapter
//    runs the updates of a collection one at a time (in this process);
//  - createIndexes with two or more already existing indexes makes it panic and
//    drop the connection: only missing indexes are sent;
//  - a duplicate key on insert is E11000 without the index name, and on update
//    or index build an InternalError carrying PostgreSQL's "duplicate key value
//    violates unique constraint" or "could not create unique index" (SQLSTATE
//    23505): both are mapped to DuplicateKeyError with the index name found
//    another way.

import {
  MongoBulkWriteError,
  MongoClient,
  MongoServerError,
  type Collection as DriverCollection,
  type Db,
  type Filter as DriverFilter,
  type UpdateFilter,
} from "mongodb";
import {
  checkBatch,
  checkCollectionName,
  checkDocument,
  checkFilter,
  checkFindOptions,
  checkIndexSpecs,
  checkUpdates,
  checkUpsertScope,
  normalizeUpdate,
} from "./checks.js";
import { redactUrl } from "./redact-url.js";
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

export interface MongoStoreOptions {
  /** `mongodb://…`; credentials, TLS and replica set go in the URL. */
  url: string;
  /** The service's own database (one per service). */
  dbName: string;
  /** How long to look for a server before failing; default 5 s. */
  serverSelectionTimeoutMS?: number;
  /** Connections per server; default 10 (each service is one small process). */
  maxPoolSize?: number;
  /**
   * Run the updates of a collection one at a time in this process, because the
   * server does not isolate them. Default: true on FerretDB (any backend: none
   * isolates, see bench/README.md "MongoDB stand-in probe"), false otherwise.
   */
  serializeUpdates?: boolean;
}

/**
 * Connects, failing fast with a clear message when no server answers, and asks
 * the server what it is (FerretDB needs serialized updates).
 */
export async function openMongoStore(options: MongoStoreOptions): Promise<MongoDocumentStore> {
  if (!/^[^/\\. "$*<>:|?]{1,63}$/.test(options.dbName)) throw new TypeError(`invalid database name ${options.dbName}`);
  const timeout = options.serverSelectionTimeoutMS ?? 5000;
  const client = new MongoClient(options.url, {
    maxPoolSize: options.maxPoolSize ?? 10,
    minPoolSize: 0,
    serverSelectionTimeoutMS: timeout,
    connectTimeoutMS: timeout,
    // Drop fields set to undefined, as the embedded store does (see checks.ts);
    // the default would store them as null.
    ignoreUndefined: true,
    appName: `emailsvc-${options.dbName}`,
  });
  let serializeUpdates: boolean;
  try {
    await client.connect();
    const info = await client.db(options.dbName).command({ buildInfo: 1 });
    serializeUpdates = options.serializeUpdates ?? typeof info.ferretdbVersion === "string";
  } catch (error) {
    await client.close().catch(() => undefined);
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(
      `cannot reach MongoDB at ${redactUrl(options.url)} (database ${options.dbName}) within ${timeout} ms: ${reason}`,
      { cause: error },
    );
  }
  return new MongoDocumentStore(client, client.db(options.dbName), serializeUpdates);
}

/**
 * Tails of the update chains of serialized collections, by "db.collection",
 * shared by every store of this process so that two stores on one database
 * still take turns.
 */
const updateChains = new Map<string, Promise<unknown>>();

function serialized<R>(key: string, task: () => Promise<R>): Promise<R> {
  const run = (updateChains.get(key) ?? Promise.resolve()).then(task);
  const tail = run.catch(() => undefined);
  updateChains.set(key, tail);
  // Forget idle chains so that the map does not grow with every collection name.
  void tail.then(() => {
    if (updateChains.get(key) === tail) updateChains.delete(key);
  });
  return run;
}

export class MongoDocumentStore implements DocumentStore {
  constructor(
    private readonly client: MongoClient,
    private readonly db: Db,
    /** See MongoStoreOptions.serializeUpdates. */
    readonly serializeUpdates: boolean,
  ) {}

  collection<T extends Doc = AnyDoc>(name: string): Collection<T> {
    checkCollectionName(name);
    const chain = this.serializeUpdates ? `${this.db.databaseName}.${name}` : undefined;
    return new MongoCollection<T>(this.db.collection<Doc>(name), chain);
  }

  async ping(): Promise<boolean> {
    try {
      const reply = await this.db.command({ ping: 1 });
      return reply.ok === 1;
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}

interface IndexInfo {
  name: string;
  key: Record<string, unknown>;
  unique?: boolean;
}

class MongoCollection<T extends Doc> implements Collection<T> {
  constructor(
    private readonly coll: DriverCollection<Doc>,
    /** Key of this collection's update chain, when updates are serialized. */
    private readonly chain: string | undefined,
  ) {}

  async createIndexes(specs: readonly IndexSpec[]): Promise<void> {
    checkIndexSpecs(specs);
    const existing = await this.listIndexes();
    const missing = specs.filter((spec) => {
      const found = existing.find((index) => index.name === spec.name);
      if (found === undefined) return true;
      if (!sameKey(found.key, spec.fields) || (found.unique === true) !== (spec.unique === true)) {
        throw new Error(
          `index ${spec.name} of ${this.coll.collectionName} exists with another definition (${JSON.stringify(found)}); migrate it`,
        );
      }
      return false;
    });
    if (missing.length === 0) return;
    try {
      // MongoDB takes an index that already exists as a no-op, so a concurrent
      // start creating the same ones is fine.
      await this.coll.createIndexes(
        missing.map((spec) => ({
          name: spec.name,
          key: spec.fields,
          ...(spec.unique === true ? { unique: true } : {}),
        })),
      );
    } catch (error) {
      throw await this.mapError(error, { names: missing.map((spec) => spec.name) });
    }
  }

  async insertOne(doc: T): Promise<void> {
    const clean = checkDocument(doc);
    try {
      await this.coll.insertOne(clean);
    } catch (error) {
      throw await this.mapError(error, { doc: clean });
    }
  }

  async insertMany(docs: readonly T[]): Promise<InsertManyResult> {
    const clean = checkBatch(docs, "insertMany");
    if (clean.length === 0) return { inserted: 0, duplicates: [] };
    try {
      // Unordered: the server goes on past a clash, and reports each.
      const result = await this.coll.insertMany(clean, { ordered: false });
      return { inserted: result.insertedCount, duplicates: [] };
    } catch (error) {
      const duplicates = duplicatePositions(error);
      if (duplicates === undefined) throw await this.mapError(error, {});
      return { inserted: clean.length - duplicates.length, duplicates };
    }
  }

  async updateMany(filter: Filter<T>, update: Update<T>): Promise<number> {
    checkFilter(filter as AnyFilter);
    const clean = normalizeUpdate(update as AnyUpdate);
    if (clean === null) return this.count(filter);
    const run = async (): Promise<number> => {
      try {
        return (await this.coll.updateMany(driverFilter(filter as AnyFilter), clean as UpdateFilter<Doc>)).matchedCount;
      } catch (error) {
        throw await this.mapError(error, {});
      }
    };
    return this.chain === undefined ? run() : serialized(this.chain, run);
  }

  async updateEach(updates: ReadonlyArray<FilteredUpdate<T>>): Promise<number[]> {
    const clean = checkUpdates(updates as ReadonlyArray<{ filter: AnyFilter; update: AnyUpdate }>);
    const one = async ({ filter, update }: { filter: AnyFilter; update: AnyUpdate | null }): Promise<number> => {
      if (update === null) return this.coll.countDocuments(driverFilter(filter));
      try {
        return (await this.coll.updateMany(driverFilter(filter), update as UpdateFilter<Doc>)).matchedCount;
      } catch (error) {
        throw await this.mapError(error, {});
      }
    };
    // Not a bulkWrite: its answer is the total matched, not each update's.
    // Serialized collections take their turn once and run the updates one by one.
    if (this.chain !== undefined) {
      return serialized(this.chain, async () => {
        const matched: number[] = [];
        for (const entry of clean) matched.push(await one(entry));
        return matched;
      });
    }
    // Every statement answered before a failure is reported, so that the updates before it are done.
    const settled = await Promise.allSettled(clean.map(one));
    const failed = settled.find((result) => result.status === "rejected");
    if (failed !== undefined) throw failed.reason;
    return settled.map((result) => (result as PromiseFulfilledResult<number>).value);
  }

  async upsertMany(docs: readonly T[], scope: Filter<T> = {} as Filter<T>): Promise<UpsertManyResult> {
    const clean = checkBatch(docs, "upsertMany");
    const fixed = checkUpsertScope(scope as AnyFilter);
    for (const [i, doc] of clean.entries()) {
      if (Object.keys(doc).length < 2) throw new TypeError(`upsertMany: document ${i} has no field besides _id`);
    }
    if (clean.length === 0) return { inserted: 0, updated: 0, duplicates: [] };
    // Not one bulkWrite of upserts: FerretDB v1 answers a failed statement of
    // one with the wrong position and every count zeroed, although the other
    // statements were applied. Instead: which _ids exist (and in the scope or
    // not), one bulk update of those in it, one unordered insert of the rest.
    // A document someone else inserts in between is reported as a duplicate.
    const run = async (): Promise<UpsertManyResult> => {
      const existing = await this.coll
        .find({ _id: { $in: clean.map((doc) => doc._id) } } as DriverFilter<Doc>)
        .toArray();
      const inScope = new Set(
        existing.filter((doc) => Object.entries(fixed).every(([field, value]) => doc[field as keyof Doc] === value)).map((doc) => doc._id),
      );
      const outOfScope = new Set(existing.map((doc) => doc._id).filter((id) => !inScope.has(id)));
      const stamped = clean.map((doc) => ({ ...doc, ...fixed }) as Doc);
      const positions = (want: (doc: Doc) => boolean) => stamped.flatMap((doc, i) => (want(doc) ? [i] : []));
      const toUpdate = positions((doc) => inScope.has(doc._id));
      const toInsert = positions((doc) => !inScope.has(doc._id) && !outOfScope.has(doc._id));
      const duplicates = positions((doc) => outOfScope.has(doc._id));

      if (toUpdate.length > 0) {
        const setOf = (i: number) => {
          const { _id, ...fields } = stamped[i]! as Doc & Record<string, unknown>;
          return { filter: { ...fixed, _id }, update: { $set: fields } };
        };
        try {
          await this.coll.bulkWrite(toUpdate.map((i) => ({ updateOne: setOf(i) })), { ordered: false });
        } catch (error) {
          if (duplicatePositions(error) === undefined && !isDuplicateKey(error)) throw await this.mapError(error, {});
          // A unique clash (FerretDB gives no usable position): find which, one at a time ($set is idempotent).
          for (const i of toUpdate) {
            const { filter, update } = setOf(i);
            await this.coll.updateOne(filter as DriverFilter<Doc>, update).catch((e: unknown) => {
              if (!isDuplicateKey(e)) throw e;
              duplicates.push(i);
            });
          }
        }
      }
      let inserted = 0;
      if (toInsert.length > 0) {
        try {
          inserted = (await this.coll.insertMany(toInsert.map((i) => stamped[i]!), { ordered: false })).insertedCount;
        } catch (error) {
          const clashes = duplicatePositions(error);
          if (clashes === undefined) throw await this.mapError(error, {});
          for (const k of clashes) duplicates.push(toInsert[k]!);
          inserted = toInsert.length - clashes.length;
        }
      }
      duplicates.sort((a, b) => a - b);
      const updated = toUpdate.filter((i) => !duplicates.includes(i)).length;
      return { inserted, updated, duplicates };
    };
    return this.chain === undefined ? run() : serialized(this.chain, run);
  }

  async findOne(filter: Filter<T>): Promise<T | null> {
    checkFilter(filter as AnyFilter);
    return (await this.coll.findOne(driverFilter(filter as AnyFilter))) as T | null;
  }

  async find(filter: Filter<T>, options?: FindOptions): Promise<T[]> {
    checkFilter(filter as AnyFilter);
    checkFindOptions(options);
    let cursor = this.coll.find(driverFilter(filter as AnyFilter));
    if (options?.sort !== undefined && Object.keys(options.sort).length > 0) cursor = cursor.sort(options.sort);
    if (options?.limit !== undefined) cursor = cursor.limit(options.limit);
    return (await cursor.toArray()) as T[];
  }

  async count(filter: Filter<T>): Promise<number> {
    checkFilter(filter as AnyFilter);
    return this.coll.countDocuments(driverFilter(filter as AnyFilter));
  }

  async countBy(filter: Filter<T>, field: string): Promise<Map<string, number>> {
    checkFilter(filter as AnyFilter);
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(field)) throw new TypeError(`countBy takes a plain field name, not ${JSON.stringify(field)}`);
    const groups = await this.coll
      .aggregate<{ _id: unknown; n: number }>([{ $match: driverFilter(filter as AnyFilter) }, { $group: { _id: `$${field}`, n: { $sum: 1 } } }])
      .toArray();
    const counts = new Map<string, number>();
    for (const group of groups) {
      const key = typeof group._id === "string" ? group._id : "";
      counts.set(key, (counts.get(key) ?? 0) + group.n);
    }
    return counts;
  }

  async updateOne(filter: Filter<T>, update: Update<T>): Promise<T | null> {
    checkFilter(filter as AnyFilter);
    const clean = normalizeUpdate(update as AnyUpdate);
    if (clean === null) return this.findOne(filter);
    const run = async (): Promise<T | null> => {
      try {
        // includeResultMetadata: false makes the driver (v6 as well as v7) return
        // the document itself rather than a { value, ok } envelope.
        const doc = await this.coll.findOneAndUpdate(driverFilter(filter as AnyFilter), clean as UpdateFilter<Doc>, {
          returnDocument: "after",
          upsert: false,
          includeResultMetadata: false,
        });
        return doc as T | null;
      } catch (error) {
        throw await this.mapError(error, {});
      }
    };
    return this.chain === undefined ? run() : serialized(this.chain, run);
  }

  async deleteOne(filter: Filter<T>): Promise<boolean> {
    checkFilter(filter as AnyFilter);
    return (await this.coll.deleteOne(driverFilter(filter as AnyFilter))).deletedCount > 0;
  }

  async deleteMany(filter: Filter<T>): Promise<number> {
    checkFilter(filter as AnyFilter);
    return (await this.coll.deleteMany(driverFilter(filter as AnyFilter))).deletedCount;
  }

  /** Nothing to do: a deleted or updated document is gone from what the server serves (Collection.compact). */
  async compact(): Promise<void> {}

  private async listIndexes(): Promise<IndexInfo[]> {
    try {
      return (await this.coll.listIndexes().toArray()) as IndexInfo[];
    } catch (error) {
      if (error instanceof MongoServerError && error.code === NAMESPACE_NOT_FOUND) return [];
      throw error;
    }
  }

  /**
   * Turns a unique violation into DuplicateKeyError naming the index: from
   * MongoDB's message ("… index: <name> dup key: …"), from FerretDB's
   * PostgreSQL message (see postgresIndexSuffix), or, for an insert, by
   * finding which unique index already holds the document's values.
   */
  private async mapError(error: unknown, context: { doc?: Doc; names?: string[] }): Promise<unknown> {
    if (!(error instanceof MongoServerError)) return error;
    if (error.code === DUPLICATE_KEY) {
      const named = /index: (\S+)/.exec(error.message)?.[1];
      if (named !== undefined) return new DuplicateKeyError(named);
      return new DuplicateKeyError(context.doc === undefined ? undefined : await this.clashingIndex(context.doc));
    }
    const postgres = /(?:violates unique constraint|could not create unique index) "([^"]+)"/.exec(error.message)?.[1];
    if (postgres !== undefined) {
      const names = [
        ...(context.names ?? []),
        ...(await this.listIndexes().catch(() => [])).map((index) => index.name),
      ];
      return new DuplicateKeyError(names.find((n) => postgres.endsWith(postgresIndexSuffix(n))));
    }
    return error;
  }

  private async clashingIndex(doc: Doc): Promise<string | undefined> {
    try {
      for (const index of await this.listIndexes()) {
        if (index.name !== "_id_" && index.unique !== true) continue;
        // A unique index holds a missing field as null; an array as each element.
        const filter: Record<string, unknown> = {};
        for (const field of Object.keys(index.key)) {
          const value = valueAt(doc, field);
          filter[field] = Array.isArray(value) ? { $in: value } : (value ?? null);
        }
        if (index.name !== "_id_") filter._id = { $ne: doc._id };
        if ((await this.coll.findOne(filter as DriverFilter<Doc>, { projection: { _id: 1 } })) !== null)
          return index.name;
      }
    } catch {
      // The name is a courtesy: the DuplicateKeyError stands without it.
    }
    return undefined;
  }
}

const DUPLICATE_KEY = 11000;

/**
 * The positions of an unordered batch's documents refused for a duplicate key,
 * when every refusal was one (ascending); undefined for any other failure.
 */
function isDuplicateKey(error: unknown): boolean {
  return (
    error instanceof MongoServerError &&
    (error.code === DUPLICATE_KEY || /violates unique constraint/.test(error.message))
  );
}

function duplicatePositions(error: unknown): number[] | undefined {
  if (!(error instanceof MongoBulkWriteError)) return undefined;
  const writeErrors = Array.isArray(error.writeErrors) ? error.writeErrors : [error.writeErrors];
  if (writeErrors.length === 0 || error.writeConcernError !== undefined) return undefined;
  if (!writeErrors.every((e) => e.code === DUPLICATE_KEY || /duplicate key|violates unique constraint/.test(e.errmsg ?? ""))) return undefined;
  return writeErrors.map((e) => e.index).sort((a, b) => a - b);
}
const NAMESPACE_NOT_FOUND = 26;

function driverFilter(filter: AnyFilter): DriverFilter<Doc> {
  // Our filter language is a subset of MongoDB's, checked by checkFilter.
  return filter as DriverFilter<Doc>;
}

/**
 * FerretDB v1 names the PostgreSQL index of index `name`
 * "<table>_<name, lower-cased and cut>_<FNV-1a 32 of name, 8 hex digits>_idx"
 * (internal/backends/postgresql/metadata/registry.go; the hash is bumped only
 * if that PostgreSQL name is taken, which leaves the index unnamed here).
 */
function postgresIndexSuffix(name: string): string {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(name, "utf8")) hash = Math.imul(hash ^ byte, 0x01000193) >>> 0;
  return `_${hash.toString(16).padStart(8, "0")}_idx`;
}

function sameKey(actual: Record<string, unknown>, wanted: Record<string, 1 | -1>): boolean {
  const a = Object.entries(actual);
  const w = Object.entries(wanted);
  return (
    a.length === w.length && a.every(([field, direction], i) => w[i]?.[0] === field && Number(direction) === w[i]?.[1])
  );
}

function valueAt(doc: Record<string, unknown>, fieldPath: string): unknown {
  let current: unknown = doc;
  for (const part of fieldPath.split(".")) {
    if (current === null || typeof current !== "object" || Array.isArray(current)) return undefined;
    current = (current as Record<string, unknown>)[part];
  }
  return current;
}
