// The import benchmark's file: N data rows of CSV from a fixed seed, the same
// bytes for every system in the run, with what a correct import must end with.
import { createWriteStream } from "node:fs";
import { once } from "node:events";

/** Separator of the tags cell (`news;weekly`); the one place that says so. */
export const TAG_SEPARATOR = ";";

/**
 * The columns, a superset both systems read, each what its own format knows:
 * `email`, `name` (listmonk's name, our metadata key `name`), `city` and
 * `plan` (our metadata keys), `attributes` (listmonk's JSON attributes column:
 * the same city and plan), `tags` (ours; listmonk ignores the column and puts
 * every row on the lists the request names).
 */
export const COLUMNS = ["email", "name", "city", "plan", "attributes", "tags"] as const;

export interface RowValues {
  name: string;
  city: string;
  plan: string;
  tags: string[];
}

export interface ImportFile {
  path: string;
  bytes: number;
  /** Data rows (the header not counted). */
  rows: number;
  /** Each distinct good address once, in the order of its first row (the erased ones included). */
  good: string[];
  /** What each good address's first row says (the values a correct import keeps). */
  values: Map<string, RowValues>;
  /** Good addresses erased before the import (ours skips them as suppressed); none of them repeated in the file. */
  erased: string[];
  /** Rows repeating an address of an earlier good row (the first row wins). */
  duplicates: number;
  /** Rows whose address is not an address, 1-based data row numbers. */
  badRows: number[];
}

const FIRST = ["Ana", "Ben", "Chloé", "Dmitri", "Emma", "Farid", "Grace", "Hiro", "Ines", "Jonas", "Karin", "Luca", "Mei", "Nora", "Omar", "Priya", "Quentin", "Rosa", "Sven", "Tariq"];
const LAST = ["Meier", "Müller", "O'Brien", "Rossi", "Schmid", "Keller, Jr.", "Nakamura", "Dubois", "Novak", "García", "Weber", "Huber", "Fischer", "Brunner", "Gerber"];
const CITIES = ["Zürich", "Bern", "Basel", "Lausanne", "Genève", "Luzern", "St. Gallen", "Lugano", "Winterthur", "Biel/Bienne"];
const PLANS = ["free", "basic", "pro", "team"];
const TAGS = ["news", "weekly", "product", "events", "vip", "beta"];
const DOMAINS = ["mail.example", "post.example", "inbox.example", "bench-import.example"];
/** Not addresses, to either system (listmonk: Go's mail.ParseAddress; ours: the email validator). */
const NOT_ADDRESSES = ["not-an-email", "two@@at.example", "", "no-domain@", "@no-local.example", "spaces in@side.example"];

/** mulberry32: a small seeded generator, the same sequence on every machine. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A good address, unique by its row: `chloe.1234@mail.example` (ASCII: both systems take it). */
function address(name: string, row: number, domain: string): string {
  const first = name.split(" ")[0]!.normalize("NFD").replace(/[^A-Za-z]/g, "").toLowerCase();
  return `${first}.${row}@${domain}`;
}

/** A CSV cell: quoted when it holds a comma, a quote or a line break (RFC 4180). */
function cell(value: string): string {
  return /[",\r\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value;
}

/**
 * Writes `rows` data rows to `path`: about 1 % not addresses, 2 % repeating
 * an earlier good address (with another name), and `erasedShare` of the
 * distinct good addresses marked to be erased beforehand.
 */
export async function generateImportFile(path: string, rows: number, options: { seed?: number; badShare?: number; duplicateShare?: number; erasedShare?: number } = {}): Promise<ImportFile> {
  const random = seeded(options.seed ?? 18);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
  const badShare = options.badShare ?? 0.01;
  const duplicateShare = options.duplicateShare ?? 0.02;
  const erasedShare = options.erasedShare ?? 0.005;
  const good: string[] = [];
  const values = new Map<string, RowValues>();
  const erased = new Set<string>();
  const badRows: number[] = [];
  let duplicates = 0;
  let bytes = 0;
  const out = createWriteStream(path);
  let buffer = COLUMNS.join(",") + "\n";
  for (let row = 1; row <= rows; row++) {
    const name = `${pick(FIRST)} ${pick(LAST)}`;
    const city = pick(CITIES);
    const plan = pick(PLANS);
    const tagList = TAGS.filter(() => random() < 0.3);
    const tags = tagList.join(TAG_SEPARATOR);
    const roll = random();
    let email: string;
    if (roll < badShare) {
      email = pick(NOT_ADDRESSES);
      badRows.push(row);
    } else if (roll < badShare + duplicateShare && good.length > 0) {
      email = good[Math.floor(random() * good.length)]!;
      // An erased address is never repeated: its repeat's outcome (suppressed
      // or duplicate) would be a matter of definition, not of speed.
      if (erased.has(email)) {
        email = address(name, row, pick(DOMAINS));
        good.push(email);
      } else {
        duplicates++;
      }
    } else {
      email = address(name, row, pick(DOMAINS));
      good.push(email);
      if (random() < erasedShare) erased.add(email);
    }
    if (!values.has(email) && badRows.at(-1) !== row) values.set(email, { name, city, plan, tags: tagList });
    const attributes = JSON.stringify({ city, plan });
    buffer += [email, name, city, plan, attributes, tags].map(cell).join(",") + "\n";
    if (buffer.length > 1 << 16) {
      bytes += Buffer.byteLength(buffer);
      if (!out.write(buffer)) await once(out, "drain");
      buffer = "";
    }
  }
  bytes += Buffer.byteLength(buffer);
  out.end(buffer);
  await once(out, "finish");
  return { path, bytes, rows, good, values, erased: [...erased], duplicates, badRows };
}
