// NeDB's serialiser (one document to one datafile line, for the group append),
// its matcher and its copier (for pages in id order); the package ships no typings for its internals.
declare module "@seald-io/nedb/lib/model.js" {
  export function serialize(document: unknown): string;
  /** Whether a document matches a NeDB query (what NeDB's own find applies). */
  export function match(document: unknown, query: unknown): boolean;
  export function deepCopy<T>(value: T): T;
}
