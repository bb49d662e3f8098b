import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

// Every catalogue has exactly the reference's (en.json) keys, no message is
// empty, and the placeholders of each message are the reference's: a German
// page never shows a key or loses a value.

const dir = join(__dirname, "..", "src", "i18n");
const read = (name: string) => JSON.parse(readFileSync(join(dir, name), "utf8")) as Record<string, string>;
const placeholders = (text: string) => [...text.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();

const reference = read("en.json");
const others = readdirSync(dir).filter((f) => f.endsWith(".json") && f !== "en.json");

it("has a German catalogue", () => {
  expect(others).toContain("de.json");
});

describe.each(others)("%s", (file) => {
  const catalogue = read(file);
  it("has the reference's keys, no more, no fewer", () => {
    expect(Object.keys(catalogue).sort()).toEqual(Object.keys(reference).sort());
  });
  it("has no empty message and the reference's placeholders in each", () => {
    for (const [key, text] of Object.entries(catalogue)) {
      expect({ key, empty: text.trim() === "" }).toEqual({ key, empty: false });
      expect({ key, placeholders: placeholders(text) }).toEqual({ key, placeholders: placeholders(reference[key] ?? "") });
    }
  });
});

it("keeps the reference sorted (one block per page, merges stay easy)", () => {
  const keys = Object.keys(reference);
  expect(keys).toEqual([...keys].sort());
});
