import { decodeCursor, encodeCursor, pageLimit } from "@emailsvc/ids";
import type { ImportJobDoc } from "../storage/documents.js";
import type { Scope } from "./deps.js";

/** The tenant's jobs, newest first (a cursor page). */
export async function listImports(scope: Scope, input: { limit: number; cursor: string }): Promise<{ items: ImportJobDoc[]; nextCursor: string }> {
  const limit = pageLimit(input.limit);
  const before = input.cursor ? decodeCursor(input.cursor, "imp", "imports") : "";
  const docs = await scope.imports.find(before ? { _id: { $lt: before } } : {}, { sort: { _id: -1 }, limit: limit + 1 });
  const items = docs.slice(0, limit);
  return { items, nextCursor: docs.length > limit ? encodeCursor(items[items.length - 1]!._id, "imports") : "" };
}
