import { derivedId, isId } from "@emailsvc/ids";
import { checkRow, CsvReader, csvRow, headerIndex, IMPORT_LIMITS, NdjsonReader, ndjsonRow, TOO_LONG } from "../src/domain/import";

// The pure parts of imports: reading CSV and NDJSON given in pieces (as an
// upload's chunks come), checking rows, and the ids derived from a job's rows.

/** Feeds `text` to a CSV reader in pieces of `size` characters. */
function readCsv(text: string, size: number): Array<string[] | typeof TOO_LONG> {
  const reader = new CsvReader();
  const out: Array<string[] | typeof TOO_LONG> = [];
  for (let i = 0; i < text.length; i += size) reader.push(text.slice(i, i + size), out);
  reader.end(out);
  return out;
}

describe("CsvReader", () => {
  const text = 'email,note\r\na@example.com,"says ""hi"", twice"\r\n\r\nb@example.com,"two\nlines"\nc@example.com,';
  const expected = [["email", "note"], ["a@example.com", 'says "hi", twice'], ["b@example.com", "two\nlines"], ["c@example.com", ""]];

  it("reads quoted fields, doubled quotes, line breaks inside quotes, CRLF and a last line without a break; blank lines are no records", () => {
    expect(readCsv(text, text.length)).toEqual(expected);
  });

  it("reads the same records whatever the pieces (a quote, a doubled quote or a CRLF split between two chunks)", () => {
    for (let size = 1; size <= 12; size++) expect(readCsv(text, size)).toEqual(expected);
  });

  it("gives a record longer than the limit, or with too many columns, as TOO_LONG and goes on with the next", () => {
    const long = `x${"y".repeat(IMPORT_LIMITS.rowChars)}`;
    const wide = Array.from({ length: IMPORT_LIMITS.columns + 1 }, () => "a").join(",");
    expect(readCsv(`email\n${long}\n${wide}\nok@example.com\n`, 4096)).toEqual([["email"], TOO_LONG, TOO_LONG, ["ok@example.com"]]);
  });
});

describe("NdjsonReader", () => {
  it("gives every line (blank ones as empty, so that rows are line numbers), across pieces, and a too long one as TOO_LONG", () => {
    const reader = new NdjsonReader();
    const out: Array<string | typeof TOO_LONG> = [];
    const long = "z".repeat(IMPORT_LIMITS.rowChars + 10);
    const text = `{"email":"a@example.com"}\r\n\n${long}\n{"email":"b@example.com"}`;
    for (let i = 0; i < text.length; i += 7000) reader.push(text.slice(i, i + 7000), out);
    reader.end(out);
    expect(out).toEqual(['{"email":"a@example.com"}', "", TOO_LONG, '{"email":"b@example.com"}']);
  });
});

describe("rows", () => {
  const columns = { email: "Email", status: "", tags: "Tags", locale: "", metadata: { plan: "Plan" } };

  it("maps CSV columns by header; a mapped column the header lacks is named", () => {
    expect(headerIndex(["Email", "Plan"], columns).missing).toEqual(["Tags"]);
    const { index } = headerIndex(["Email", "Tags", "Plan"], columns);
    expect(checkRow(csvRow(["a@example.com", "x; y,x", ""], index, columns))).toEqual({
      email: "a@example.com",
      key: "a@example.com",
      status: undefined,
      locale: undefined,
      tags: ["x", "y"],
      metadata: {},
    });
  });

  it("checks each field with the single create's rules, naming field and code, never the value", () => {
    expect(checkRow({ email: "nope" })).toEqual({ field: "email", code: "invalid_email", detail: "is not a valid email address" });
    expect(checkRow({ email: "a@example.com", status: "gone" })).toMatchObject({ field: "status", code: "invalid_status" });
    expect(checkRow({ email: "a@example.com", tags: Array.from({ length: 101 }, (_, i) => `t${i}`) })).toMatchObject({ field: "tags", code: "too_many_tags" });
    expect(checkRow({ email: "a@example.com", metadata: { "a.b": 1 } })).toMatchObject({ field: "metadata", code: "invalid_metadata" });
    expect(checkRow({ email: "a@example.com", locale: "xx" })).toMatchObject({ field: "locale", code: "invalid_locale" });
    expect(ndjsonRow("[1]")).toMatchObject({ field: "row", code: "invalid_json" });
    expect(ndjsonRow('{"email":"a@example.com","id":"sub_1"}')).toMatchObject({ field: "row", code: "unknown_field" });
  });
});

describe("derivedId", () => {
  it("is the same for the same job and row, an id of its prefix, different per row and per job, and sorts by row", () => {
    const at = Date.UTC(2026, 10, 27);
    expect(derivedId("sub", at, "imp_a", 7)).toBe(derivedId("sub", at, "imp_a", 7));
    expect(isId("sub", derivedId("sub", at, "imp_a", 7))).toBe(true);
    expect(derivedId("sub", at, "imp_a", 7)).not.toBe(derivedId("sub", at, "imp_b", 7));
    const ids = [1, 2, 31, 32, 1000, 500_000].map((n) => derivedId("sub", at, "imp_a", n));
    expect([...ids].sort()).toEqual(ids);
  });
});
