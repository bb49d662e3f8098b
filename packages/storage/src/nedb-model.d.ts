// NeDB's serialiser (one document to one datafile line), used by the group
// append of the embedded store; the package ships no typings for its internals.
declare module "@seald-io/nedb/lib/model.js" {
  export function serialize(document: unknown): string;
}
