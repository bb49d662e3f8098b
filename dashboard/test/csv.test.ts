import { csvField, guessEmailColumn, metadataKeyOf, parseCsv, toCsv } from "../src/pages/subscribers/csv";

// The import page's preview and the list's export: what a spreadsheet writes
// is read back as it was meant, and what the export writes reads back the same.

describe("parseCsv", () => {
  it("reads quoted fields with separators, quotes and line breaks, CRLF and a byte order mark", () => {
    const text = '\ufeffemail,name,note\r\na@example.com,"Doe, Ann","said ""hi""\nthen left"\r\nb@example.com,Bob,\r\n';
    expect(parseCsv(text, "comma")).toEqual([
      ["email", "name", "note"],
      ["a@example.com", "Doe, Ann", 'said "hi"\nthen left'],
      ["b@example.com", "Bob", ""],
    ]);
  });

  it("takes the chosen separator, skips blank lines and stops at maxRows", () => {
    expect(parseCsv("a;b\n\n1;2\n3;4\n5;6", "semicolon", { maxRows: 3 })).toEqual([["a", "b"], ["1", "2"], ["3", "4"]]);
    expect(parseCsv("a\tb\n1\t2", "tab")).toEqual([["a", "b"], ["1", "2"]]);
    expect(parseCsv("a|b\n1|2", "pipe")).toEqual([["a", "b"], ["1", "2"]]);
  });

  it("drops a last row the cut of a file's beginning may have shortened, and keeps it when the text is the whole file", () => {
    expect(parseCsv("email\na@example.com\nb@exa", "comma", { complete: false })).toEqual([["email"], ["a@example.com"]]);
    expect(parseCsv("email\na@example.com\nb@example.com", "comma")).toEqual([["email"], ["a@example.com"], ["b@example.com"]]);
    // Cut inside a quoted field.
    expect(parseCsv('email,note\na@example.com,"open', "comma")).toEqual([["email", "note"]]);
  });
});

describe("toCsv", () => {
  it("quotes what must be quoted and reads back the same", () => {
    const rows = [["email", "tags"], ["a@example.com", 'vip;"gold", new\nline']];
    expect(parseCsv(toCsv(rows), "comma")).toEqual(rows);
  });

  it("neutralises formulas except in the columns it is told to leave (the address)", () => {
    expect(csvField("=HYPERLINK(1)")).toBe("'=HYPERLINK(1)");
    expect(csvField("+1")).toBe("'+1");
    expect(csvField("-x@example.com", false)).toBe("-x@example.com");
    expect(toCsv([["-a@example.com", "@x"]], new Set([0]))).toBe("-a@example.com,'@x\r\n");
  });
});

it("guesses the address column and makes metadata keys from headers", () => {
  expect(guessEmailColumn(["Name", "E-Mail", "City"])).toBe("E-Mail");
  expect(guessEmailColumn(["contact", "city"])).toBe("contact");
  expect(metadataKeyOf("First Name")).toBe("first_name");
  expect(metadataKeyOf("  Städt ")).toBe("st_dt");
  expect(metadataKeyOf("!!!")).toBe("field");
  expect(metadataKeyOf("x".repeat(50))).toHaveLength(40);
});
