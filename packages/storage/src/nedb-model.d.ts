// NeDB's pure document functions, which the embedded store reuses so that its
// matching, updating and serialising keep NeDB's exact semantics; the package
// ships no typings for its internals.
declare module "@seald-io/nedb/lib/model.js" {
  /** One document as one datafile line (Dates as `{"$$date":ms}`); throws on `$`-prefixed or dotted field names. */
  export function serialize(document: unknown): string;
  /** The inverse of serialize. */
  export function deserialize(line: string): unknown;
  /** Whether a document matches a NeDB query. */
  export function match(document: unknown, query: unknown): boolean;
  /** A copy of the document with the update operators applied (the document is not changed); throws on a bad update. */
  export function modify<T>(document: T, update: unknown): T;
  export function deepCopy<T>(value: T): T;
  /** The value at a dotted path; through an array, the array of the values at the rest of the path. */
  export function getDotValue(document: unknown, path: string): unknown;
  /** NeDB's total order over values (undefined < null < numbers < strings < booleans < dates < arrays < objects). */
  export function compareThings(a: unknown, b: unknown): number;
}
