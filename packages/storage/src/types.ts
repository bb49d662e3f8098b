// The document-store port every service's storage adapters build on. It is the
// part of MongoDB that MongoDB itself, FerretDB v1 and the embedded file store all
// serve the same way (see DESIGN.md "Storage"): single-document atomicity, unique
// indexes, and a small filter/update language.

/**
 * Every stored document has a string `_id` (our prefixed, time-sortable ids).
 * A service declares its documents as interfaces extending Doc, naming every
 * field: filters and updates on a typed collection are checked against them
 * (see Filter and Update).
 *
 * Values that round-trip identically in every adapter: strings, finite numbers,
 * booleans, null, arrays and plain objects of those, except an array directly
 * inside an array (FerretDB v1 refuses it; wrap the inner one in an object).
 * Field names must not start with `$` nor contain `.`. Fields set to `undefined`
 * are dropped. Date objects are not part of the contract: store timestamps as
 * numbers of ms or ISO strings.
 */
export type Doc = { _id: string };

/** A document of any shape: the default of an untyped collection (tests, tools). */
export type AnyDoc = { _id: string; [field: string]: unknown };

/** A document that belongs to one tenant (`<account id>:<mode>`); every index of it starts with `tenant`. */
export type TenantDoc = Doc & { tenant: string };

/**
 * What filters compare with and `$pull` removes. Objects, arrays and Dates are
 * left out on purpose: MongoDB, FerretDB and NeDB (whose matcher the embedded
 * store uses) disagree on how they compare.
 */
export type Scalar = string | number | boolean | null;

/**
 * Scalar or operator condition on one field, with MongoDB's semantics: `null`
 * also matches a missing field, and on an array field a condition holds when an
 * element satisfies it (`$ne`/`$nin`: when no element equals the value).
 * `V` is what the field holds (an array field: its element).
 */
export type Condition<V extends Scalar = Scalar> =
  | V
  | null
  | {
      $eq?: V | null;
      $ne?: V | null;
      $in?: Array<V | null>;
      $nin?: Array<V | null>;
      /**
       * An array field holding every one of the values (a non-empty list of
       * strings, numbers or booleans). On a scalar field: the field equals each.
       */
      $all?: Array<Exclude<V, null>>;
      /** Range operands are strings or numbers only; a field of another type never matches. */
      $gt?: Extract<V, string | number>;
      $gte?: Extract<V, string | number>;
      $lt?: Extract<V, string | number>;
      $lte?: Extract<V, string | number>;
      $exists?: boolean;
    };

/** The element of an array type, or the type itself. */
type ElementOf<V> = V extends readonly (infer E)[] ? E : V;
/** The scalar values a condition on a field of type V compares with (never: an object field). */
type ScalarOf<V> = Extract<ElementOf<Exclude<V, undefined>>, Scalar>;
/** A condition on a field of type V; an object field takes `$exists` (or null: missing) only. */
type FieldCondition<V> = unknown extends V
  ? Condition
  : [ScalarOf<V>] extends [never]
    ? null | { $exists: boolean }
    : Condition<ScalarOf<V>>;
/** Fields holding objects (or arrays of objects), whose inner fields a dotted path may name. */
type NestedKeys<T> = {
  [K in keyof T & string]-?: Exclude<ElementOf<Exclude<T[K], undefined>>, Scalar> extends never ? never : K;
}[keyof T & string];

/**
 * Conditions on the document's own fields, ANDed together, typed by the
 * document: a field the document does not declare is a compile error, and so is
 * a value of the wrong type. Inner fields of object fields are named by dotted
 * paths (`"metadata.plan"`), compared with scalars. `$or` of such filters is
 * allowed at the top level. A field whose condition is `undefined` is rejected
 * at run time: backends read it differently (MongoDB as null or as no
 * condition, NeDB as never matching), and either can leak or hide data.
 */
export type Filter<T = AnyDoc> = string extends keyof T ? AnyFilter : TypedFilter<T>;

type TypedFilter<T> = { [K in keyof T & string]?: FieldCondition<T[K]> } & {
  [P in `${NestedKeys<T>}.${string}`]?: Condition;
} & { $or?: Array<TypedFilter<T>> };

/** Any filter, as the adapters check and translate it (no document type). */
export type AnyFilter = { [field: string]: Condition | AnyFilter[] | { $exists: boolean } | undefined } & { $or?: AnyFilter[] };

/** Paths an update may name: the document's fields, or dotted paths inside its object fields. */
type Paths<T> = (keyof T & string) | `${NestedKeys<T>}.${string}`;
type ValueAt<T, P> = P extends keyof T ? T[P] : unknown;
/** Fields that hold arrays, with their element type. */
type ArrayKeys<T> = { [K in keyof T & string]-?: Exclude<T[K], undefined> extends readonly unknown[] ? K : never }[keyof T & string];
type NumberKeys<T> = { [K in keyof T & string]-?: Exclude<T[K], undefined> extends number ? K : never }[keyof T & string];
type OptionalKeys<T> = { [K in keyof T & string]-?: undefined extends T[K] ? K : never }[keyof T & string];

/**
 * Update operators, typed by the document: `$set` takes the document's fields
 * with values of their types (or dotted paths inside object fields), `$unset`
 * optional fields and inner paths, `$inc` number fields, `$addToSet`/`$push`/
 * `$pull` array fields with their elements. A document is never replaced whole
 * by an update. `_id` cannot change; one path (or a path and its parent) may
 * appear in one operator only. An update that changes nothing acts as `findOne`.
 */
export type Update<T = AnyDoc> = string extends keyof T ? AnyUpdate : TypedUpdate<T>;

interface TypedUpdate<T> {
  $set?: { [P in Paths<Omit<T, "_id">>]?: ValueAt<T, P> };
  $unset?: { [P in OptionalKeys<T> | `${NestedKeys<T>}.${string}`]?: "" | true | 1 };
  $inc?: { [P in NumberKeys<T> | `${NestedKeys<T>}.${string}`]?: number };
  /**
   * Appends values not yet present (by exact value; objects compare field by
   * field, so build them with a stable key order). An empty `$each` changes nothing.
   */
  $addToSet?: { [K in ArrayKeys<T>]?: { $each: Array<ElementOf<Exclude<T[K], undefined>>> } };
  /**
   * Removes values equal to the given one (exact value, never a condition).
   * Pulling from a missing field does nothing.
   */
  $pull?: { [K in ArrayKeys<T>]?: Extract<ElementOf<Exclude<T[K], undefined>>, Scalar> };
  /** Appends the values; an empty `$each` changes nothing. */
  $push?: { [K in ArrayKeys<T>]?: { $each: Array<ElementOf<Exclude<T[K], undefined>>> } };
}

/** Any update, as the adapters check and apply it (no document type). */
export interface AnyUpdate {
  $set?: Record<string, unknown>;
  $unset?: Record<string, "" | true | 1>;
  $inc?: Record<string, number>;
  $addToSet?: Record<string, { $each: unknown[] }>;
  $pull?: Record<string, Scalar>;
  $push?: Record<string, { $each: unknown[] }>;
}

export type SortSpec = Record<string, 1 | -1>;

export interface FindOptions {
  /** Sort on fields holding one type each (mixed types order differently per backend). */
  sort?: SortSpec;
  /** A positive integer. */
  limit?: number;
}

export interface IndexSpec {
  /** Stable name; also used to name the index in MongoDB. */
  name: string;
  /** Ordered fields, e.g. `{ tenant: 1, email_key: 1 }`. */
  readonly fields: Readonly<SortSpec>;
  unique?: boolean;
  /**
   * The field of a compound index whose documents hold arrays (MongoDB makes
   * such an index "multikey" by itself and allows one array field per
   * compound index). It must be declared: the embedded store indexes each
   * element of it, and refuses a write that puts an array into a field of a
   * compound index not declared so, so that no index ends up with two array
   * fields (which MongoDB refuses). Not with `unique`.
   */
  arrayField?: string;
}

export interface Collection<T extends Doc = AnyDoc> {
  /** Idempotent; safe to call at every start. */
  createIndexes(specs: readonly IndexSpec[]): Promise<void>;
  /** Throws DuplicateKeyError when a unique index (or `_id`) already holds the value. */
  insertOne(doc: T): Promise<void>;
  findOne(filter: Filter<T>): Promise<T | null>;
  find(filter: Filter<T>, options?: FindOptions): Promise<T[]>;
  count(filter: Filter<T>): Promise<number>;
  /**
   * How many documents match `filter`, by the value of `field` (a field
   * holding strings; documents lacking it are counted under ""). MongoDB: one
   * aggregation of `$match` and `$group` (the part FerretDB serves); embedded:
   * one pass over the matching documents.
   */
  countBy(filter: Filter<T>, field: string): Promise<Map<string, number>>;
  /**
   * Atomically updates the first document matching `filter` and returns it as it
   * is after the update, or null when nothing matched (a guarded update lost).
   * Throws DuplicateKeyError when the update would break a unique index.
   */
  updateOne(filter: Filter<T>, update: Update<T>): Promise<T | null>;
  /**
   * Inserts many documents in one round trip (embedded: one append), skipping
   * every one that clashes with a unique index (or `_id`), whether with a
   * stored document or one earlier in the batch, and reporting its position:
   * a batch retried after a crash inserts only what is missing. Not atomic: a
   * failure other than a clash may leave some inserted. At most
   * MAX_BATCH_DOCUMENTS documents.
   */
  insertMany(docs: readonly T[]): Promise<InsertManyResult>;
  /**
   * Applies `update` to every document matching `filter` and returns how many
   * matched. Each document changes atomically, the set does not (a reader may
   * see some changed and others not yet). Throws DuplicateKeyError when the
   * update would break a unique index (documents changed before stay changed).
   */
  updateMany(filter: Filter<T>, update: Update<T>): Promise<number>;
  /**
   * Many updateMany calls in one go, answering how many documents each
   * `{ filter, update }` matched. The updates of one call are not ordered
   * among themselves: give each its own documents (e.g. by `_id`). Every
   * filter and update is checked before anything changes (a bad one: nothing
   * written). For a writer with many small guarded updates ready at once
   * (delivery's outcomes): the embedded store applies them in one pass with
   * one datafile append and one wait for it; MongoDB sends them as separate
   * statements without waiting for each other (a bulkWrite answers only the
   * total matched). Not atomic as a whole: each document changes atomically;
   * a DuplicateKeyError comes once the updates before it are applied (the
   * embedded store applies none after it, MongoDB the others). At most
   * MAX_BATCH_DOCUMENTS updates.
   */
  updateEach(updates: ReadonlyArray<FilteredUpdate<T>>): Promise<number[]>;
  /**
   * Per document, by `_id` and the fields of `scope`: inserts it when none
   * matches, else sets its fields (fields the given document lacks stay as they
   * are). A few round trips for all (MongoDB: find, bulk update, insert);
   * each document changes atomically, the set does not. A document that would
   * break a unique index (an `_id` held outside `scope`, or a value taken) is
   * skipped and its position reported, and so may be one another writer
   * inserted in between. At most MAX_BATCH_DOCUMENTS documents.
   */
  upsertMany(docs: readonly T[], scope?: Filter<T>): Promise<UpsertManyResult>;
  /** Returns whether a document was deleted. */
  deleteOne(filter: Filter<T>): Promise<boolean>;
  /** Returns how many documents were deleted. */
  deleteMany(filter: Filter<T>): Promise<number>;
  /**
   * Makes what was deleted or overwritten in this collection gone from the
   * store's files, for erasure. The embedded store only appends to its
   * datafile, so deleted documents and earlier values stay in it until it is
   * rewritten: this rewrites it from the live documents, after the writes
   * queued before the call (calls made while a rewrite runs share the one
   * right after it). A no-op on MongoDB, which keeps no history of documents
   * in its collections.
   */
  compact(): Promise<void>;
}

/** Most documents one insertMany or upsertMany takes (a page of a fan-out, not a whole audience). */
export const MAX_BATCH_DOCUMENTS = 10_000;

/** One update of Collection.updateEach: what updateMany takes. */
export interface FilteredUpdate<T extends Doc = AnyDoc> {
  filter: Filter<T>;
  update: Update<T>;
}

export interface InsertManyResult {
  inserted: number;
  /** Positions (in the given array) of the documents skipped for a unique-index clash, ascending. */
  duplicates: number[];
}

export interface UpsertManyResult {
  inserted: number;
  /** Documents that existed and had their fields set (changed or not). */
  updated: number;
  /** Positions of the documents skipped because their insert clashed with a unique index, ascending. */
  duplicates: number[];
}

export interface DocumentStore {
  collection<T extends Doc = AnyDoc>(name: string): Collection<T>;
  /** Answers whether the backing server is reachable (for health checks). */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

export class DuplicateKeyError extends Error {
  constructor(
    /** Name of the index that was violated, when the backend tells it. */
    readonly index: string | undefined,
  ) {
    super(`duplicate key${index ? ` in index ${index}` : ""}`);
    this.name = "DuplicateKeyError";
  }
}
