import { invalid } from "@emailsvc/errors";
import { isId } from "./ids.js";

// Cursors are opaque to clients: base64url of a small JSON naming the last id
// seen and the filter the page was made for. A cursor that does not decode, or
// was made for another filter, is a clear 400 rather than a wrong page.

interface CursorBody {
  v: 1;
  after: string;
  filter: string;
}

export function encodeCursor(after: string, filter: string): string {
  const body: CursorBody = { v: 1, after, filter };
  return Buffer.from(JSON.stringify(body)).toString("base64url");
}

/**
 * The last id a cursor names. `idPrefix`: the list's typed ids (`sub`, …), or
 * a check of its own for a list keyed otherwise (the suppression list's keyed hashes).
 */
export function decodeCursor(cursor: string, idPrefix: string | ((id: string) => boolean), filter: string): string {
  const bad = () => invalid("cursor is invalid", [{ field: "cursor", description: "is not a next_cursor this list returned" }]);
  if (cursor.length > 512 || !/^[A-Za-z0-9_-]+$/.test(cursor)) throw bad();
  let body: unknown;
  try {
    const bytes = Buffer.from(cursor, "base64url");
    // Only the canonical encoding is accepted: trailing bits that decoding
    // would silently drop are tampering too.
    if (bytes.toString("base64url") !== cursor) throw bad();
    body = JSON.parse(bytes.toString("utf8"));
  } catch {
    throw bad();
  }
  const b = body as Partial<CursorBody> | null;
  const validId = typeof idPrefix === "string" ? (id: string) => isId(idPrefix, id) : idPrefix;
  if (!b || b.v !== 1 || typeof b.after !== "string" || !validId(b.after) || b.filter !== filter) throw bad();
  return b.after;
}

export const PAGE = { defaultLimit: 50, maxLimit: 500 } as const;

/** A request's page size: 0 means the default; otherwise 1..max (the REST lists' bounds unless given). */
export function pageLimit(limit: number, bounds: { defaultLimit: number; maxLimit: number } = PAGE): number {
  if (limit === 0) return bounds.defaultLimit;
  if (!Number.isInteger(limit) || limit < 1 || limit > bounds.maxLimit) {
    throw invalid(`limit must be between 1 and ${bounds.maxLimit}`, [{ field: "limit", description: `must be 1-${bounds.maxLimit}` }]);
  }
  return limit;
}

/** What a list's page is fetched with: the id range after the cursor, and the order and size. */
export interface PageQuery {
  range: { _id?: { $gt: string } | { $lt: string } };
  options: { sort: { _id: 1 | -1 }; limit: number };
}

/**
 * One page of a list in id order, from a request's `limit` and `cursor`:
 * decodes the cursor (made for this list's `idPrefix` and `filterKey`, else a
 * 400), fetches one row more than the page (so the last page says it is the
 * last), and mints the next cursor. `fetch` runs the query, ANDing `range`
 * with the list's own filter.
 */
export async function pageById<D extends { _id: string }>(
  request: { limit: number; cursor: string },
  list: { idPrefix: string | ((id: string) => boolean); filterKey?: string; newestFirst?: boolean },
  fetch: (query: PageQuery) => Promise<D[]>,
): Promise<{ docs: D[]; nextCursor: string }> {
  const limit = pageLimit(request.limit);
  const filterKey = list.filterKey ?? "";
  const after = request.cursor ? decodeCursor(request.cursor, list.idPrefix, filterKey) : undefined;
  const range = after === undefined ? {} : { _id: list.newestFirst ? { $lt: after } : { $gt: after } };
  const fetched = await fetch({ range, options: { sort: { _id: list.newestFirst ? -1 : 1 }, limit: limit + 1 } });
  const docs = fetched.slice(0, limit);
  const last = docs[docs.length - 1];
  return { docs, nextCursor: fetched.length > limit && last ? encodeCursor(last._id, filterKey) : "" };
}
