// CSV as the import API reads it (RFC 4180: a header row, fields quoted with
// `"` when they hold the separator, a quote or a line break, `""` for a quote
// inside) and as the export writes it. Pure functions, no DOM: the import
// page parses the first rows of a file for its preview, the list page writes
// an export; dashboard/test/csv.test.ts checks both.

export type Delimiter = "comma" | "semicolon" | "tab" | "pipe";
export const DELIMITERS: Record<Delimiter, string> = { comma: ",", semicolon: ";", tab: "\t", pipe: "|" };

/**
 * The rows of a CSV text, at most `maxRows`. `complete`: the text is the
 * whole file; when it is only its beginning, a last row the cut may have
 * shortened is dropped. A leading byte order mark is skipped.
 */
export function parseCsv(text: string, delimiter: Delimiter, options: { maxRows?: number; complete?: boolean } = {}): string[][] {
  const sep = DELIMITERS[delimiter];
  const maxRows = options.maxRows ?? Number.POSITIVE_INFINITY;
  const rows: string[][] = [];
  let row: string[] = [];
  let field = "";
  let quoted = false;
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  let rowEnded = false;
  const endRow = () => {
    row.push(field);
    // A blank line is no row (the import skips it too).
    if (row.length > 1 || row[0] !== "") rows.push(row);
    row = [];
    field = "";
    rowEnded = true;
  };
  while (i < text.length && rows.length < maxRows) {
    const c = text[i]!;
    rowEnded = false;
    if (quoted) {
      if (c === '"') {
        if (text[i + 1] === '"') {
          field += '"';
          i += 2;
          continue;
        }
        quoted = false;
      } else field += c;
      i++;
      continue;
    }
    if (c === '"' && field === "") quoted = true;
    else if (c === sep) {
      row.push(field);
      field = "";
    } else if (c === "\r" || c === "\n") {
      endRow();
      if (c === "\r" && text[i + 1] === "\n") i++;
    } else field += c;
    i++;
  }
  const cutShort = i < text.length;
  if (!rowEnded && (field !== "" || row.length > 0)) {
    // The text ended inside a row: whole only if the text is the whole file.
    if (options.complete !== false && !cutShort && !quoted) endRow();
  }
  return rows.slice(0, maxRows);
}

// A spreadsheet runs a cell that starts with one of these as a formula
// (CSV injection): an export prefixes such a value with "'".
const FORMULA_START = /^[=+\-@\t\r]/;

/** One CSV field: quoted when it must be; `guard` neutralises a formula. */
export function csvField(value: string, guard = true): string {
  const safe = guard && FORMULA_START.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

/** Rows to CSV text (comma-separated, CRLF line ends, as RFC 4180 has it). `unguarded`: column indexes written as they are. */
export function toCsv(rows: string[][], unguarded: ReadonlySet<number> = new Set()): string {
  return rows.map((row) => row.map((v, i) => csvField(v, !unguarded.has(i))).join(",")).join("\r\n") + "\r\n";
}

/** A metadata key the API takes (letters, digits, _ and -, 1-40, not starting with -) made from a column header. */
export function metadataKeyOf(header: string): string {
  const key = header
    .trim()
    .toLowerCase()
    .replace(/[^a-z0-9_-]+/g, "_")
    .replace(/^[-_]+|_+$/g, "")
    .slice(0, 40);
  return key || "field";
}

/** The guess of the address column: a header named like one, else the first. */
export function guessEmailColumn(headers: readonly string[]): string | undefined {
  return headers.find((h) => /^(e-?mail|email_?address|e-?mail address|address)$/i.test(h.trim())) ?? headers[0];
}
