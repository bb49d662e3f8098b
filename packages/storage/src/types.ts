// The document-store port every service's storage adapters build on. It is the
// part of MongoDB that MongoDB itself, FerretDB v1 and the embedded file store all
// serve the same way (see DESIGN.md "Storage"): single-document atomicity, unique
// indexes, and a small filter/update language.

/** Every stored document has a string `_id` (our prefixed, time-sortable ids). */
export type Doc = { _id: string } & Record<string, unknown>;

/** Scalar or operator condition on one field. */
export type Condition =
  | string
  | number
  | boolean
  | null
  | {
      $eq?: unknown;
      $ne?: unknown;
      $in?: unknown[];
      $nin?: unknown[];
      $gt?: unknown;
      $gte?: unknown;
      $lt?: unknown;
      $lte?: unknown;
      $exists?: boolean;
    };

/**
 * Equality / operator conditions on top-level or dotted fields, ANDed together.
 * `$or` of such filters is allowed at the top level.
 */
export type Filter = { [field: string]: Condition | Filter[] | undefined } & { $or?: Filter[] };

/** Update operators; a document is never replaced whole by an update. */
export interface Update {
  $set?: Record<string, unknown>;
  $unset?: Record<string, "" | true | 1>;
  $inc?: Record<string, number>;
  /** Appends values not yet present (by exact value). */
  $addToSet?: Record<string, { $each: unknown[] }>;
  /** Removes values equal to the given one (exact value, never a condition). */
  $pull?: Record<string, unknown>;
  $push?: Record<string, { $each: unknown[] }>;
}

export type SortSpec = Record<string, 1 | -1>;

export interface FindOptions {
  sort?: SortSpec;
  limit?: number;
}

export interface IndexSpec {
  /** Stable name; also used to name the index in MongoDB. */
  name: string;
  /** Ordered fields, e.g. `{ tenant: 1, email_key: 1 }`. */
  fields: SortSpec;
  unique?: boolean;
}

export interface Collection<T extends Doc = Doc> {
  /** Idempotent; safe to call at every start. */
  createIndexes(specs: IndexSpec[]): Promise<void>;
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
