// The document-store port every service's storage adapters build on. It is the
// part of MongoDB that MongoDB itself, FerretDB v1 and the embedded file store all
// serve the same way (see DESIGN.md "Storage"): single-document atomicity, unique
// indexes, and a small filter/update language.

/**
 * Every stored document has a string `_id` (our prefixed, time-sortable ids).
 * A service declares each collection's documents as an interface extending
 * `Doc`; filters and updates are then typed by its fields (see `Filter` and
 * `Update`): a field the interface does not declare is a compile error.
 *
 * Values that round-trip identically in every adapter: strings, finite numbers,
 * booleans, null, arrays and plain objects of those, except an array directly
 * inside an array (FerretDB v1 refuses it; wrap the inner one in an object).
 * Field names must not start with `$` nor contain `.`. Fields set to `undefined`
 * are dropped. Date objects are not part of the contract: store timestamps as
 * numbers of ms or ISO strings.
 */
export interface Doc {
  _id: string;
}

/**
 * A document of no declared shape: any field, any value. What `collection()`
 * gives without a document type (the adapters' contract tests, scripts).
 */
export type AnyDoc = { _id: string } & Record<string, unknown>;

/**
 * What filters compare with and `$pull` removes. Objects, arrays and Dates are
 * left out on purpose: MongoDB, FerretDB and NeDB disagree on how they compare.
 */
export type Scalar = string | number | boolean | null;

// ---------------------------------------------------------------------------
// Field paths of a document type. A path is a top-level field or, through a
// plain object field (a nested object, or a record such as `metadata`), a
// dotted path into it; an array ends a path (a condition on an array field
// matches its elements). Four levels deep at most, which is more than any
// document here has.
// ---------------------------------------------------------------------------

type Depth = [never, 0, 1, 2, 3];

/** A value a path may continue into: a plain object, not an array or a scalar. */
type Nested<V> = V extends Scalar | undefined | readonly unknown[] ? never : V extends object ? V : never;

/** Every field path of `T`, e.g. `"status" | "metadata" | \`metadata.${string}\``. */
export type Path<T, D extends number = 4> = [D] extends [never]
  ? never
  : {
      [K in keyof T & string]: K | (Nested<NonNullable<T[K]>> extends never ? never : `${K}.${Path<Nested<NonNullable<T[K]>>, Depth[D]>}`);
    }[keyof T & string];

/** The type of the value at `P` in `T`. */
export type ValueAt<T, P extends string> = P extends keyof T
  ? T[P]
  : P extends `${infer Head}.${infer Rest}`
    ? Head extends keyof T
      ? ValueAt<Nested<NonNullable<T[Head]>>, Rest>
      : never
    : never;

/** What a condition on a field of type `V` compares with: the field's scalars, or an array field's elements. */
type Comparable<V> = unknown extends V
  ? Scalar
  : Extract<(NonNullable<V> extends readonly (infer E)[] ? E : NonNullable<V>), Scalar>;

/**
 * Condition on one field, with MongoDB's semantics: `null` also matches a
 * missing field, and on an array field a condition holds when an element
 * satisfies it (`$ne`/`$nin`: when no element equals the value). On a field of
 * a declared type, the values must be of that type.
 */
export type Condition<V = unknown> =
  | Comparable<V>
  | null
  | {
      $eq?: Comparable<V> | null;
      $ne?: Comparable<V> | null;
      $in?: Array<Comparable<V> | null>;
      $nin?: Array<Comparable<V> | null>;
      /** Range operands are strings or numbers only; a field of another type never matches. */
      $gt?: Extract<Comparable<V>, string | number>;
      $gte?: Extract<Comparable<V>, string | number>;
      $lt?: Extract<Comparable<V>, string | number>;
      $lte?: Extract<Comparable<V>, string | number>;
      $exists?: boolean;
    };

/** The filter language on documents of no declared shape (`AnyDoc`). */
export type UntypedFilter = { [field: string]: Condition | UntypedFilter[] | undefined } & { $or?: UntypedFilter[] };

/**
 * Equality / operator conditions on fields of `T` (dotted paths into its
 * object fields included), ANDed together; `$or` of such filters is allowed at
 * the top level. A field `T` does not declare is a compile error. A field whose
 * condition is `undefined` is rejected at run time: backends read it
 * differently (MongoDB as null or as no condition, NeDB as never matching), and
 * either can leak or hide data.
 */
export type Filter<T = AnyDoc> = string extends Path<T>
  ? UntypedFilter
  : { [P in Path<T>]?: Condition<ValueAt<T, P>> } & { $or?: Array<Filter<T>> };

/** The update language on documents of no declared shape (`AnyDoc`). */
export interface UntypedUpdate {
  // `| undefined` so that a typed update (whose fields are optional) is one of
  // these; at run time only `$set` takes undefined (as "leave the field be").
  $set?: Record<string, unknown>;
  $unset?: Record<string, "" | true | 1 | undefined>;
  $inc?: Record<string, number | undefined>;
  $addToSet?: Record<string, { $each: unknown[] } | undefined>;
  $pull?: Record<string, Scalar | undefined>;
  $push?: Record<string, { $each: unknown[] } | undefined>;
}

type Settable<T> = Exclude<Path<T>, "_id">;
type Element<V> = NonNullable<V> extends readonly (infer E)[] ? E : never;
type PathsOf<T, Wanted> = { [P in Settable<T>]: NonNullable<ValueAt<T, P>> extends Wanted ? P : never }[Settable<T>];
type ArrayPaths<T> = { [P in Settable<T>]: NonNullable<ValueAt<T, P>> extends readonly unknown[] ? P : never }[Settable<T>];

/**
 * Update operators on fields of `T`; a document is never replaced whole by an
 * update. Paths may be dotted; `_id` cannot change; one path (or a path and
 * its parent) may appear in one operator only. An update that changes nothing
 * acts as `findOne`. Fields and values are checked against `T` at compile time.
 */
export type Update<T = AnyDoc> = string extends Path<T>
  ? UntypedUpdate
  : {
      $set?: { [P in Settable<T>]?: ValueAt<T, P> };
      $unset?: { [P in Settable<T>]?: "" | true | 1 };
      $inc?: { [P in PathsOf<T, number>]?: number };
      /**
       * Appends values not yet present (by exact value; objects compare field by
       * field, so build them with a stable key order). An empty `$each` changes nothing.
       */
      $addToSet?: { [P in ArrayPaths<T>]?: { $each: Array<Element<ValueAt<T, P>>> } };
      /**
       * Removes values equal to the given one (exact value, never a condition).
       * Pulling from a missing field does nothing.
       */
      $pull?: { [P in ArrayPaths<T>]?: Extract<Element<ValueAt<T, P>>, Scalar> };
      /** Appends the values; an empty `$each` changes nothing. */
      $push?: { [P in ArrayPaths<T>]?: { $each: Array<Element<ValueAt<T, P>>> } };
    };

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

export interface Collection<T extends Doc = AnyDoc> {
  /** Idempotent; safe to call at every start. */
  createIndexes(specs: readonly IndexSpec[]): Promise<void>;
  /** Throws DuplicateKeyError when a unique index (or `_id`) already holds the value. */
  insertOne(doc: T): Promise<void>;
  findOne(filter: Filter<T>): Promise<T | null>;
  find(filter: Filter<T>, options?: FindOptions): Promise<T[]>;
  count(filter: Filter<T>): Promise<number>;
  /**
   * Atomically updates the first document matching `filter` and returns it as it
   * is after the update, or null when nothing matched (a guarded update lost).
   * Throws DuplicateKeyError when the update would break a unique index.
   */
  updateOne(filter: Filter<T>, update: Update<T>): Promise<T | null>;
  /** Returns whether a document was deleted. */
  deleteOne(filter: Filter<T>): Promise<boolean>;
  /** Returns how many documents were deleted. */
  deleteMany(filter: Filter<T>): Promise<number>;
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
