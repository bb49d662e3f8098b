import { create } from "@bufbuild/protobuf";
import { timestampDate, TimestampSchema, type Timestamp } from "@bufbuild/protobuf/wkt";

// Conversions every resource's mapping uses: proto values <-> the REST API's JSON.

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

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:[Zz]|([+-])(\d{2}):(\d{2}))$/;

/** Days from 1970-01-01 to a date of the proleptic Gregorian calendar (H. Hinnant's days_from_civil). */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146097 + dayOfEra - 719468;
}

/**
 * A date-time the request gave, already matched against the document's
 * DATE_TIME_PATTERN (openapi/kit.ts), as the instant it names: exact to the
 * nanosecond, whatever the offset, for any year (Date would read 0000-0099 as
 * 1900-1999 and refuses the leap second :60, which is the next second here).
 */
export function timestampFromRfc3339(text: string): Timestamp {
  const m = RFC3339.exec(text);
  if (!m) throw new Error("not an RFC 3339 date-time; the request was validated against the document first");
  const [, year, month, day, hour, minute, second, fraction = "", sign, offsetHours = "0", offsetMinutes = "0"] = m;
  const offset = (sign === "-" ? -1 : 1) * (Number(offsetHours) * 3600 + Number(offsetMinutes) * 60);
  const seconds =
    daysFromCivil(Number(year), Number(month), Number(day)) * 86400 + Number(hour) * 3600 + Number(minute) * 60 + Number(second) - offset;
  return create(TimestampSchema, { seconds: BigInt(seconds), nanos: Number(fraction.padEnd(9, "0")) });
}
