import { invalid } from "./errors.js";
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

export function decodeCursor(cursor: string, idPrefix: string, filter: string): string {
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
  if (!b || b.v !== 1 || typeof b.after !== "string" || !isId(idPrefix, b.after) || b.filter !== filter) throw bad();
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
