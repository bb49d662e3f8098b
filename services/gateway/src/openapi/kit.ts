import { invisibleBmpClass } from "@emailsvc/text";
import type { JsonSchema, ParameterObject } from "./types.js";

// Small builders the resources write their part of the document with, so that
// every operation states its responses, bodies and parameters the same way.

export const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

export const timestamp = (description: string) => ({ type: "string", format: "date-time", readOnly: true, description }) as const;

export const nullableTimestamp = (description: string) => ({
  type: ["string", "null"],
  format: "date-time",
  readOnly: true,
  description,
});

/** `{items, next_cursor}` of the schema `item`. */
export const page = (item: string, description: string) => ({
  type: "object",
  description,
  additionalProperties: false,
  required: ["items", "next_cursor"],
  properties: {
    items: { type: "array", items: ref(item) },
    next_cursor: { type: ["string", "null"], description: "Pass as `cursor` to get the next page; null on the last page." },
  },
});

/** A success response with a JSON body. */
export const json = (schema: JsonSchema, description: string) => ({
  description,
  headers: { "X-Request-Id": { $ref: "#/components/headers/RequestId" } },
  content: { "application/json": { schema } },
});

/** A success response without a body. */
export const noContent = (description: string) => ({
  description,
  headers: { "X-Request-Id": { $ref: "#/components/headers/RequestId" } },
});

/** The status of each shared error response (common.ts). */
const ERROR_STATUS = {
  BadRequest: "400",
  Unauthorized: "401",
  Forbidden: "403",
  NotFound: "404",
  Conflict: "409",
  UnprocessableContent: "422",
  PayloadTooLarge: "413",
  UnsupportedMediaType: "415",
  TooManyRequests: "429",
  InternalError: "500",
  Unavailable: "503",
  Timeout: "504",
} as const;
export type ErrorResponse = keyof typeof ERROR_STATUS;

/** References to the shared error responses, keyed by their status. */
export const errors = (...names: ErrorResponse[]) =>
  Object.fromEntries(names.map((name) => [ERROR_STATUS[name], { $ref: `#/components/responses/${name}` }]));

/** Every call that reaches a service may also fail in these ways. */
export const serviceErrors: ErrorResponse[] = ["Unauthorized", "InternalError", "Unavailable", "Timeout"];
/** Every operation that reads a JSON body may refuse it in these ways. */
export const bodyErrors: ErrorResponse[] = ["BadRequest", "PayloadTooLarge", "UnsupportedMediaType"];

/** A required JSON body of the component schema `schema`. */
export const body = (schema: string) => ({ required: true, content: { "application/json": { schema: ref(schema) } } });

/** A JSON body that may be left out (no body, or an empty one; the handler sees none). */
export const optionalBody = (schema: string) => ({ required: false, content: { "application/json": { schema: ref(schema) } } });

/** A reference to a component parameter. */
export const param = (name: string) => ({ $ref: `#/components/parameters/${name}` }) as unknown as ParameterObject;

export const pathParam = (name: string, description: string, schema: JsonSchema = { type: "string" }): ParameterObject => ({
  name,
  in: "path",
  required: true,
  description,
  schema,
});

export const ADMIN: Array<Record<string, string[]>> = [{ AdminToken: [] }];
export const PUBLIC: Array<Record<string, string[]>> = [];

/**
 * A one-line text as the services take it: no control characters (C0 and
 * DEL) nor any of `forbidden` (characters, as in a regex class), at most
 * `maxLength` characters, and not blank: at least one character that shows
 * (not a space, nor a format character such as U+200B, U+FEFF or U+2060:
 * @emailsvc/text's rule, whose BMP part the pattern spells out).
 */
export function lineText(maxLength: number, message: string, forbidden = "") {
  const allowed = `[^\\u0000-\\u001f\\u007f${forbidden}]`;
  const visible = `[^${invisibleBmpClass()}${forbidden}]`;
  return {
    type: "string",
    minLength: 1,
    maxLength,
    pattern: `^${allowed}*${visible}${allowed}*$`,
    "x-pattern-message": message,
  } as const;
}

// An RFC 3339 date-time (section 5.6) as a request may give one, written out
// as a pattern because the gateway treats `format` as an annotation (see
// http/validation.ts): real calendar dates (30-day months, February 29 only
// in leap years of the proleptic Gregorian calendar), `T` and `Z` in either
// case, a leap second :60, 1-9 fractional digits, an offset within ±23:59.
// Years run to 9998, so that every instant it names, whatever its offset, is
// one a protobuf Timestamp holds (which ends with 9999-12-31T23:59:59Z).
const YEAR = "(?:[0-8]\\d{3}|9[0-8]\\d{2}|99[0-8]\\d)";
const LEAP_YEAR = "(?:\\d{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)";
const MONTH_DAY = "(?:(?:0[1-9]|1[0-2])-(?:0[1-9]|1\\d|2[0-8])|(?:0[13-9]|1[0-2])-(?:29|30)|(?:0[13578]|1[02])-31)";
const FULL_DATE = `(?:${YEAR}-${MONTH_DAY}|${LEAP_YEAR}-02-29)`;
const FULL_TIME = "[Tt](?:[01]\\d|2[0-3]):[0-5]\\d:(?:[0-5]\\d|60)(?:\\.\\d{1,9})?(?:[Zz]|[+-](?:[01]\\d|2[0-3]):[0-5]\\d)";
export const DATE_TIME_PATTERN = `^${FULL_DATE}${FULL_TIME}$`;

/** A date-time a request gives (RFC 3339 with its offset); see DATE_TIME_PATTERN. */
export const dateTimeInput = (description: string) =>
  ({
    type: "string",
    format: "date-time",
    maxLength: 35,
    pattern: DATE_TIME_PATTERN,
    "x-pattern-message": "is not an RFC 3339 date-time (e.g. 2026-11-22T10:30:00Z or 2026-11-22T11:30:00+01:00) of a year up to 9998",
    description,
  }) as const;
