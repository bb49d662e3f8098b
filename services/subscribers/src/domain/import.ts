import { AppError, invalid } from "@emailsvc/errors";
import {
  checkMetadataSize,
  emailKey,
  isStatus,
  LIMITS,
  validateEmail,
  validateLocale,
  validateMetadata,
  type Locale,
  type Metadata,
  type Status,
} from "./subscriber.js";
import { validateTagNames } from "./tag.js";

// Pure rules of bulk imports (issue 18): the job's settings, reading rows out
// of CSV or NDJSON text, and checking each row with the same validators a
// single create uses. No I/O.

export const IMPORT_FORMATS = ["csv", "ndjson"] as const;
export type ImportFormat = (typeof IMPORT_FORMATS)[number];
export const IMPORT_MODES = ["create", "upsert"] as const;
export type ImportMode = (typeof IMPORT_MODES)[number];
export const IMPORT_STATES = ["uploading", "queued", "running", "completed", "failed", "cancelled"] as const;
export type ImportState = (typeof IMPORT_STATES)[number];

/** Bounds of one job, chosen so that a batch, not the file, bounds memory. */
export const IMPORT_LIMITS = {
  /** Largest chunk of an upload AppendImportChunk takes. */
  chunkBytes: 1024 * 1024,
  /** Largest file (the gateway refuses more as it streams). */
  fileBytes: 1024 * 1024 * 1024,
  /** Longest row (a CSV record or an NDJSON line), in characters. */
  rowChars: 64 * 1024,
  /** Most columns of a CSV row. */
  columns: 200,
  /** Most data rows of a job. */
  rows: 2_000_000,
  /** Rows read, checked and written together: one lookup, one insertMany (IMPORT_BATCH_ROWS sets it). */
  batchRows: 1000,
} as const;

/** A row longer than the limits, given in its place. */
export const TOO_LONG: unique symbol = Symbol("row too long");

/** Which CSV column holds what, by header name. */
export interface ImportColumns {
  email: string;
  status: string;
  tags: string;
  locale: string;
  metadata: Record<string, string>;
}

export interface ImportCounts {
  rows_read: number;
  created: number;
  updated: number;
  skipped: number;
  failed: number;
}

export const NO_COUNTS: ImportCounts = { rows_read: 0, created: 0, updated: 0, skipped: 0, failed: 0 };

/** A row of the report: a row that failed a check, or was skipped. Never the row's values. */
export interface RowProblem {
  field: string;
  code: string;
  detail: string;
}

/** Codes of rows skipped (not failed): the row was fine, the mode or the list said no. */
export const SKIP_CODES = ["exists", "duplicate_in_file", "suppressed"] as const;

/** A row that passed every check. `status`, `locale`, `tags`, `metadata` undefined: not given. */
export interface ImportRow {
  email: string;
  key: string;
  status: Status | undefined;
  locale: Locale | undefined;
  tags: string[];
  metadata: Metadata;
}

/** The fields of a row as read, before checks. */
interface RawRow {
  email: unknown;
  status?: unknown;
  tags?: unknown;
  locale?: unknown;
  metadata?: unknown;
}

/** Checks the job's column mapping against the document-field rules (metadata keys like metadata's). */
export function validateColumns(format: ImportFormat, raw: ImportColumns): ImportColumns {
  if (format === "ndjson") return { email: "", status: "", tags: "", locale: "", metadata: {} };
  const violations = [];
  if (raw.email.trim() === "") violations.push({ field: "columns.email", description: "is required for CSV: the header of the column holding the address" });
  const keys = Object.keys(raw.metadata);
  if (keys.length > LIMITS.metadataKeys) violations.push({ field: "columns.metadata", description: `at most ${LIMITS.metadataKeys} keys` });
  try {
    validateMetadata(Object.fromEntries(keys.map((k) => [k, ""])), false);
  } catch (err) {
    if (err instanceof AppError) violations.push(...(err.extra.fieldViolations ?? []).map((v) => ({ ...v, field: `columns.${v.field}` })));
  }
  if (violations.length > 0) throw invalid("the column mapping is invalid", violations);
  return raw;
}

/**
 * Reads CSV records (RFC 4180: `"` quotes, `""` inside quotes, CRLF or LF)
 * from text given piece by piece; a record may span pieces. A record longer
 * than IMPORT_LIMITS.rowChars is given as TOO_LONG and its rest skipped.
 */
export class CsvReader {
  private field = "";
  private record: string[] = [];
  private quoted = false;
  /** After a closing quote, until the next separator. */
  private afterQuote = false;
  private chars = 0;
  private tooLong = false;
  private fieldStarted = false;

  constructor(private readonly delimiter = ",") {}

  /** Records completed by this piece of text. */
  push(text: string, out: Array<string[] | typeof TOO_LONG>): void {
    const d = this.delimiter;
    for (let i = 0; i < text.length; i++) {
      const c = text[i]!;
      this.chars++;
      if (this.quoted) {
        if (c === '"') {
          if (text[i + 1] === '"') {
            this.add('"');
            i++;
            this.chars++;
          } else if (i + 1 === text.length) {
            // A quote at the end of a piece: whether it is doubled shows in the next one.
            this.quoted = false;
            this.afterQuote = true;
            this.pendingQuote = true;
          } else {
            this.quoted = false;
            this.afterQuote = true;
          }
        } else this.add(c);
        continue;
      }
      if (this.pendingQuote) {
        this.pendingQuote = false;
        if (c === '"') {
          // The quote that ended the last piece was the first of a doubled one.
          this.quoted = true;
          this.afterQuote = false;
          this.add('"');
          continue;
        }
      }
      if (c === d) {
        this.endField();
      } else if (c === "\n") {
        this.endRecord(out);
      } else if (c === "\r") {
        // CRLF: the LF ends the record; a lone CR is dropped.
      } else if (c === '"' && !this.fieldStarted) {
        this.quoted = true;
        this.fieldStarted = true;
      } else if (!this.afterQuote) {
        this.add(c);
      }
    }
  }

  private pendingQuote = false;

  /** The last record, when the text does not end with a line break. */
  end(out: Array<string[] | typeof TOO_LONG>): void {
    this.pendingQuote = false;
    if (this.fieldStarted || this.record.length > 0 || this.field !== "") this.endRecord(out);
  }

  private add(c: string): void {
    this.fieldStarted = true;
    if (this.tooLong) return;
    this.field += c;
  }

  private endField(): void {
    if (!this.tooLong) {
      this.record.push(this.field);
      if (this.record.length > IMPORT_LIMITS.columns) this.tooLong = true;
    }
    this.field = "";
    this.fieldStarted = false;
    this.afterQuote = false;
    if (this.chars > IMPORT_LIMITS.rowChars) this.tooLong = true;
  }

  private endRecord(out: Array<string[] | typeof TOO_LONG>): void {
    this.endField();
    const record = this.record;
    const tooLong = this.tooLong || record.length > IMPORT_LIMITS.columns;
    this.record = [];
    this.chars = 0;
    this.tooLong = false;
    this.quoted = false;
    // A blank line is no record.
    if (!tooLong && record.length === 1 && record[0] === "") return;
    out.push(tooLong ? TOO_LONG : record);
  }
}

/** Where each mapped column is in the header; a mapped column the header lacks is the job's failure. */
export function headerIndex(header: string[], columns: ImportColumns): { index: Map<string, number>; missing: string[] } {
  const index = new Map<string, number>();
  header.forEach((name, i) => {
    const key = name.trim();
    if (!index.has(key)) index.set(key, i);
  });
  const wanted = [columns.email, columns.status, columns.tags, columns.locale, ...Object.values(columns.metadata)].filter((c) => c !== "");
  return { index, missing: wanted.filter((c) => !index.has(c)) };
}

/** A CSV record's fields as the mapping names them. */
export function csvRow(record: string[], index: Map<string, number>, columns: ImportColumns): RawRow {
  const cell = (name: string): string | undefined => {
    if (name === "") return undefined;
    const i = index.get(name);
    return i === undefined ? undefined : (record[i] ?? "");
  };
  const tagsText = cell(columns.tags);
  const metadata: Record<string, unknown> = {};
  for (const [key, column] of Object.entries(columns.metadata)) {
    const value = cell(column);
    // An empty cell sets nothing: a CSV cannot tell "empty" from "not given".
    if (value !== undefined && value !== "") metadata[key] = value;
  }
  return {
    email: cell(columns.email) ?? "",
    ...(columns.status !== "" ? { status: (cell(columns.status) ?? "").trim() } : {}),
    ...(tagsText !== undefined ? { tags: tagsText.split(/[;,]/).map((t) => t.trim()).filter((t) => t !== "") } : {}),
    ...(columns.locale !== "" ? { locale: (cell(columns.locale) ?? "").trim() } : {}),
    metadata,
  };
}

/** An NDJSON line's row: an object with email and optionally status, tags, metadata, locale. */
export function ndjsonRow(line: string): RawRow | RowProblem {
  if (line.length > IMPORT_LIMITS.rowChars) return { field: "row", code: "row_too_long", detail: `a line is at most ${IMPORT_LIMITS.rowChars} characters` };
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return { field: "row", code: "invalid_json", detail: "the line is not a JSON object" };
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) return { field: "row", code: "invalid_json", detail: "the line is not a JSON object" };
  const obj = value as Record<string, unknown>;
  const unknownField = Object.keys(obj).find((k) => !["email", "status", "tags", "metadata", "locale"].includes(k));
  if (unknownField !== undefined) return { field: "row", code: "unknown_field", detail: "fields are email, status, tags, metadata and locale" };
  return obj as unknown as RawRow;
}

/** Checks a row with the single create's validators; the first problem found is the row's. */
export function checkRow(raw: RawRow): ImportRow | RowProblem {
  let email: string;
  try {
    email = validateEmail(raw.email);
  } catch {
    return { field: "email", code: "invalid_email", detail: raw.email === "" || raw.email === undefined ? "is required" : "is not a valid email address" };
  }
  let status: Status | undefined;
  if (raw.status !== undefined && raw.status !== "") {
    if (typeof raw.status !== "string" || !isStatus(raw.status)) return { field: "status", code: "invalid_status", detail: "one of active, unsubscribed, bounced, complained" };
    status = raw.status;
  }
  let tags: string[] = [];
  if (raw.tags !== undefined) {
    if (!Array.isArray(raw.tags)) return { field: "tags", code: "invalid_tags", detail: "a list of tag names" };
    if (raw.tags.length > LIMITS.tagsPerRequest) return { field: "tags", code: "too_many_tags", detail: `at most ${LIMITS.tagsPerRequest} tags per row` };
    try {
      tags = validateTagNames(raw.tags);
    } catch (err) {
      return { field: "tags", code: "invalid_tags", detail: describe(err, "tag names are 1-100 characters, no control characters or \"/\"") };
    }
  }
  let metadata: Metadata = {};
  if (raw.metadata !== undefined) {
    if (raw.metadata === null || typeof raw.metadata !== "object" || Array.isArray(raw.metadata)) return { field: "metadata", code: "invalid_metadata", detail: "an object" };
    try {
      metadata = validateMetadata(raw.metadata as Record<string, unknown>, false) as Metadata;
      checkMetadataSize(metadata);
    } catch (err) {
      const code = err instanceof AppError && err.code === "metadata_too_large" ? "metadata_too_large" : "invalid_metadata";
      return { field: "metadata", code, detail: describe(err, "invalid metadata") };
    }
  }
  let locale: Locale | undefined;
  if (raw.locale !== undefined && raw.locale !== "") {
    try {
      locale = validateLocale(raw.locale);
    } catch (err) {
      return { field: "locale", code: "invalid_locale", detail: describe(err, "not a supported locale") };
    }
  }
  return { email, key: emailKey(email), status, locale, tags, metadata };
}

/** The validators' own wording (field names and rules, never the value), the first violation's. */
function describe(err: unknown, fallback: string): string {
  if (err instanceof AppError) {
    const v = err.extra.fieldViolations?.[0];
    if (v) return `${v.field}: ${v.description}`;
  }
  return fallback;
}

export function isRowProblem(value: ImportRow | RawRow | RowProblem): value is RowProblem {
  return typeof (value as RowProblem).code === "string" && typeof (value as RowProblem).field === "string" && !("email" in value);
}

/**
 * Reads NDJSON lines from text given piece by piece: every line, blank ones
 * as "" (so that row numbers are line numbers); a line longer than
 * IMPORT_LIMITS.rowChars is given as TOO_LONG and not held.
 */
export class NdjsonReader {
  private line = "";
  private tooLong = false;

  push(text: string, out: Array<string | typeof TOO_LONG>): void {
    let start = 0;
    for (let end = text.indexOf("\n"); end !== -1; end = text.indexOf("\n", start)) {
      this.take(text.slice(start, end));
      this.emit(out);
      start = end + 1;
    }
    this.take(text.slice(start));
  }

  end(out: Array<string | typeof TOO_LONG>): void {
    if (this.line !== "" || this.tooLong) this.emit(out);
  }

  private take(part: string): void {
    if (this.tooLong) return;
    this.line += part;
    if (this.line.length > IMPORT_LIMITS.rowChars + 1) {
      this.line = "";
      this.tooLong = true;
    }
  }

  private emit(out: Array<string | typeof TOO_LONG>): void {
    const line = this.line.endsWith("\r") ? this.line.slice(0, -1) : this.line;
    out.push(this.tooLong || line.length > IMPORT_LIMITS.rowChars ? TOO_LONG : line);
    this.line = "";
    this.tooLong = false;
  }
}
