// The document-store port every service's storage adapters build on. It is the
// part of MongoDB that MongoDB itself, FerretDB v1 and the embedded file store all
// serve the same way (see DESIGN.md "Storage"): single-document atomicity, unique
// indexes, and a small filter/update language.

/**
 * Every stored document has a string `_id` (our prefixed, time-sortable ids).
 *
 * Values that round-trip identically in every adapter: strings, finite numbers,
 * booleans, null, arrays and plain objects of those, except an array directly
 * inside an array (FerretDB v1 refuses it; wrap the inner one in an object).
 * Field names must not start with `$` nor contain `.`. Fields set to `undefined`
 * are dropped. Date objects are not part of the contract: store timestamps as
 * numbers of ms or ISO strings.
 */
export type Doc = { _id: string } & Record<string, unknown>;

/**
 * What filters compare with and `$pull` removes. Objects, arrays and Dates are
 * left out on purpose: MongoDB, FerretDB and NeDB disagree on how they compare.
 */
export type Scalar = string | number | boolean | null;

/**
 * Scalar or operator condition on one field, with MongoDB's semantics: `null`
 * also matches a missing field, and on an array field a condition holds when an
 * element satisfies it (`$ne`/`$nin`: when no element equals the value).
 */
export type Condition =
  | Scalar
  | {
      $eq?: Scalar;
      $ne?: Scalar;
      $in?: Scalar[];
      $nin?: Scalar[];
      /** Range operands are strings or numbers only; a field of another type never matches. */
      $gt?: string | number;
      $gte?: string | number;
      $lt?: string | number;
      $lte?: string | number;
      $exists?: boolean;
    };

/**
 * Equality / operator conditions on top-level or dotted fields, ANDed together.
 * `$or` of such filters is allowed at the top level. A field whose condition is
 * `undefined` is rejected: backends read it differently (MongoDB as null or
 * as no condition, NeDB as never matching), and either can leak or hide data.
 */
export type Filter = { [field: string]: Condition | Filter[] | undefined } & { $or?: Filter[] };

/**
 * Update operators; a document is never replaced whole by an update. Paths may be
 * dotted; `_id` cannot change; one path (or a path and its parent) may appear in
 * one operator only. An update that changes nothing acts as `findOne`.
 */
export interface Update {
  $set?: Record<string, unknown>;
  $unset?: Record<string, "" | true | 1>;
  $inc?: Record<string, number>;
  /**
   * Appends values not yet present (by exact value; objects compare field by
   * field, so build them with a stable key order). An empty `$each` changes nothing.
   */
  $addToSet?: Record<string, { $each: unknown[] }>;
  /**
   * Removes values equal to the given one (exact value, never a condition).
   * Pulling from a missing field does nothing.
   */
  $pull?: Record<string, Scalar>;
  /** Appends the values; an empty `$each` changes nothing. */
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
}

export interface Collection<T extends Doc = Doc> {
  /** Idempotent; safe to call at every start. */
  createIndexes(specs: readonly IndexSpec[]): Promise<void>;
  /** Throws DuplicateKeyError when a unique index (or `_id`) already holds the value. */
  insertOne(doc: T): Promise<void>;
  findOne(filter: Filter): Promise<T | null>;
  find(filter: Filter, options?: FindOptions): Promise<T[]>;
  count(filter: Filter): Promise<number>;
  /**
   * Atomically updates the first document matching `filter` and returns it as it
   * is after the update, or null when nothing matched (a guarded update lost).
   * Throws DuplicateKeyError when the update would break a unique index.
   */
  updateOne(filter: Filter, update: Update): Promise<T | null>;
  /** Returns whether a document was deleted. */
  deleteOne(filter: Filter): Promise<boolean>;
  /** Returns how many documents were deleted. */
  deleteMany(filter: Filter): Promise<number>;
}

export interface DocumentStore {
  collection<T extends Doc = Doc>(name: string): Collection<T>;
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
