// The datafile's positional reads (at-rest.ts LineReader): lines read near
// each other come from one read ahead, and what it serves is always what the
// file holds at that place: never bytes past what the appender finished
// writing, never the old file's after a rewrite renamed a new one over it.

import { appendFileSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { LineReader, READ_AHEAD_BYTES } from "../src/at-rest.js";

/** Lines of the form `{"n":<i>,"pad":"…"}` and where each starts. */
function linesOf(from: number, count: number, pad: number): { text: string; at: number[]; len: number[] } {
  let text = "";
  const at: number[] = [];
  const len: number[] = [];
  for (let i = from; i < from + count; i++) {
    const line = JSON.stringify({ n: i, pad: "x".repeat(pad + (i % 7)) });
    at.push(Buffer.byteLength(text));
    len.push(Buffer.byteLength(line));
    text += `${line}\n`;
  }
  return { text, at, len };
}

describe("LineReader", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), "line-reader-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** A datafile holding `text`, and a reader of it that takes the file's first `written` bytes as whole (all of `text` at first). */
  function readerOf(text: string): { file: string; reader: LineReader; whole: { written: number } } {
    const file = path.join(dir, "data.db");
    writeFileSync(file, text);
    const whole = { written: Buffer.byteLength(text) };
    const reader = new LineReader(file, () => whole.written, READ_AHEAD_BYTES);
    reader.reopen();
    return { file, reader, whole };
  }

  it("reads a run of neighbouring lines with one read of the file per window, each line as written", () => {
    const { text, at, len } = linesOf(0, 2000, 200);
    const { reader } = readerOf(text);
    for (let i = 0; i < 2000; i++) expect(reader.read(at[i]!, len[i]!)).toMatchObject({ n: i });
    // About 420 KB in 64 KB windows (the first read reads only its line: nothing to be near yet).
    expect(reader.fileReads).toBeLessThanOrEqual(Math.ceil(Buffer.byteLength(text) / READ_AHEAD_BYTES) + 2);
    // Back to the start, out of order within a window, and a lone read far away: each still its own line.
    for (const i of [0, 5, 3, 1999, 1000, 1001, 2, 999]) expect(reader.read(at[i]!, len[i]!)).toMatchObject({ n: i });
  });

  it("never reads ahead past the bytes the appender finished: lines appended later are read from the file", () => {
    const first = linesOf(0, 50, 100);
    const { file, reader, whole } = readerOf(first.text);
    // Part of an append is in the file and not yet finished: the window stops before it.
    const more = linesOf(50, 50, 100);
    appendFileSync(file, Buffer.alloc(300, "#"));
    for (let i = 0; i < 50; i++) expect(reader.read(first.at[i]!, first.len[i]!)).toMatchObject({ n: i });
    // The append finishes with other bytes there (a failed append's part written over by the next one's lines).
    writeFileSync(file, first.text);
    appendFileSync(file, more.text);
    whole.written += Buffer.byteLength(more.text);
    const base = Buffer.byteLength(first.text);
    for (let i = 0; i < 50; i++) expect(reader.read(base + more.at[i]!, more.len[i]!)).toMatchObject({ n: 50 + i });
  });

  it("reads the new file after a rewrite renamed it over the old one (reopen drops what was read ahead)", () => {
    const old = linesOf(0, 100, 80);
    const { file, reader, whole } = readerOf(old.text);
    for (let i = 0; i < 10; i++) expect(reader.read(old.at[i]!, old.len[i]!)).toMatchObject({ n: i });
    // The same positions hold other documents in the rewritten file.
    const rewritten = linesOf(500, 100, 80);
    writeFileSync(`${file}~`, rewritten.text);
    renameSync(`${file}~`, file);
    reader.reopen();
    whole.written = Buffer.byteLength(rewritten.text);
    for (let i = 0; i < 10; i++) expect(reader.read(rewritten.at[i]!, rewritten.len[i]!)).toMatchObject({ n: 500 + i });
  });
});
