import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";

// Conversions every resource's mapping uses: proto values -> the REST API's JSON.

/** RFC 3339 in UTC with milliseconds, e.g. `2026-11-22T10:30:00.000Z`. */
export function rfc3339(ts: Timestamp | undefined, field: string): string {
  if (!ts) throw new Error(`the service returned no ${field}`);
  return timestampDate(ts).toISOString();
}

/** An absent timestamp (not happened yet) is null. */
export function rfc3339OrNull(ts: Timestamp | undefined): string | null {
  return ts ? timestampDate(ts).toISOString() : null;
}

/** Proto's "" for "none" becomes null. */
export function stringOrNull(value: string): string | null {
  return value === "" ? null : value;
}

/** The service's "" on the last page becomes null. */
export function nextCursor(value: string): string | null {
  return value === "" ? null : value;
}
