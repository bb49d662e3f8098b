import { promises as fs } from "node:fs";
import type { Slot } from "./slots.js";
import type { TailLines } from "./datafile.js";

// Group commit for a datafile. Appending each write's lines to the file before
// the next write of the collection (as NeDB did) costs one open/append/close
// per write, one at a time: about 400 creates a second through the API, with
// the disk idle between appends (bench/README.md). Here a write only queues
// its lines; one append at a time writes everything queued since the last one
// began, and each operation of the store is acknowledged once the append
// holding its lines has finished. Under load, one append carries the lines of
// many writes.
//
// What changes: a write is visible to readers of this process as soon as it is
// applied in memory, which may be a moment before its lines are in the file (as
// with MongoDB's default read concern before the journal commit). A crash in
// that moment loses writes no caller was told were done; lines in the file
// keep their order, so a restart sees a prefix of the writes, never a later
// state under an earlier one. Nothing is fsynced, as before: a crash of the
// process loses nothing acknowledged, a crash of the machine may.
//
// The file stays open (O_APPEND) between appends: opening and closing it for
// each one cost a campaign's delivery about a twentieth of its time. It is
// closed when a rewrite replaces it (the next append opens the new file),
// after a failed append, and by close().
//
// Each document line carries its slot and the version it holds: once the
// append is done, the slot learns where its line is (at-rest.ts), unless a
// later version replaced it meanwhile. The appender keeps the file's size for
// that (it is the file's only writer).

interface Batch extends TailLines {
  /** The lines, without their newlines (see enqueue). */
  lines: string[];
  /** Each line's UTF-8 bytes, its newline included. */
  bytes: number[];
  /** The slot whose document each line holds, and its version then (undefined, 0: not a document line). */
  owners: Array<Slot | undefined>;
  versions: number[];
  /** All lines' bytes. */
  size: number;
  /** Queued after a rewrite's snapshot: its lines go to the new file too (see rewrite). */
  captured: boolean;
  done: Promise<void>;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/** What a rewrite's `renamed` reads of a captured batch: each line's owner and version, to place it in the new file. */
export type AppendedBatch = Pick<Batch, "lines" | "bytes" | "owners" | "versions">;

function newBatch(captured: boolean): Batch {
  let resolve!: () => void;
  let reject!: (error: unknown) => void;
  const done = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // A batch nobody waits for (a write whose caller went away) must not be an unhandled rejection.
  done.catch(() => undefined);
  return { lines: [], bytes: [], owners: [], versions: [], size: 0, captured, done, resolve, reject };
}

export class GroupAppender {
  /** Batches not yet appended, in order; new lines join the last one unless a rewrite's snapshot came after it. */
  private readonly queue: Batch[] = [];
  /** The append loop, while it runs. */
  private writing: Promise<void> | undefined;
  /** While a rewrite's last step (sync and rename) runs: lines wait in the queue. */
  private paused = false;
  /** While a rewrite runs: the batches appended to the old file since its snapshot, for the new one. */
  private captured: Batch[] | undefined;
  private lastDone: Promise<void> = Promise.resolve();
  /** The datafile, open for appending while appends come. */
  private handle: fs.FileHandle | undefined;
  /** Appends made (one per batch written): tests read it. */
  appends = 0;
  /** The file's size: where the next append's first line starts (set after load and by a rewrite's rename). */
  size = 0;

  constructor(
    private readonly filename: string,
    private readonly mode: number,
    /** Told when an append fails: memory then holds writes the file does not. */
    private readonly onError: (error: unknown) => void,
    /** Told where a document line went once its append is done. */
    private readonly onPlaced: (slot: Slot, version: number, at: number, len: number) => void,
  ) {}

  /**
   * Queues one line (without its newline, which the append writes: a line
   * and a newline joined would be a second string, copied whole when written)
   * for the next append; `owner` and its `version` for a document's line.
   */
  enqueue(line: string, owner?: Slot, version = 0): void {
    let batch = this.queue[this.queue.length - 1];
    const capturing = this.captured !== undefined;
    if (batch === undefined || batch.captured !== capturing) {
      batch = newBatch(capturing);
      this.queue.push(batch);
    }
    const bytes = Buffer.byteLength(line, "utf8") + 1;
    batch.lines.push(line);
    batch.bytes.push(bytes);
    batch.owners.push(owner);
    batch.versions.push(version);
    batch.size += bytes;
    if (this.writing === undefined && !this.paused) this.writing = this.drain();
  }

  /** Resolves once everything queued so far is in the file; rejects if its append failed. */
  durable(): Promise<void> {
    return this.queue[this.queue.length - 1]?.done ?? this.lastDone;
  }

  /**
   * A rewrite of the whole file from a snapshot of the documents, without
   * holding up appends: call it right when the snapshot is taken (before any
   * await). Lines queued before the snapshot are in it and go to the old file
   * only; lines queued after it are appended to the old file as usual (and
   * acknowledged) and kept; `write` writes the snapshot to a new file and
   * then calls `finish` with its last step, which runs with no append in
   * flight and gets the kept batches to add before the rename. Appends queued
   * meanwhile wait, and go to the new file. If anything fails, the old file
   * stays, whole: it has every line.
   */
  async rewrite(write: (finish: (last: (tail: readonly TailLines[]) => Promise<void>) => Promise<void>) => Promise<void>): Promise<void> {
    if (this.captured !== undefined) throw new Error("a rewrite is already running");
    this.captured = [];
    // Queued before the snapshot (perhaps while an earlier rewrite ran): the old file's only.
    for (const batch of this.queue) batch.captured = false;
    try {
      await write(async (last) => {
        this.paused = true;
        try {
          while (this.writing !== undefined) await this.writing;
          await last(this.captured!);
        } finally {
          // Renamed over (or not, on failure): either way the next append opens the file by name.
          await this.closeFile();
          this.captured = undefined;
          this.paused = false;
          if (this.queue.length > 0 && this.writing === undefined) this.writing = this.drain();
        }
      });
    } finally {
      this.captured = undefined;
    }
  }

  /** Closes the datafile once nothing is queued or being written; a later enqueue opens it again. */
  async close(): Promise<void> {
    while (this.writing !== undefined) await this.writing;
    await this.closeFile();
  }

  private async closeFile(): Promise<void> {
    const handle = this.handle;
    this.handle = undefined;
    await handle?.close().catch(() => undefined);
  }

  private async drain(): Promise<void> {
    // Start on the next turn so that writes applied in this one join the first append.
    await new Promise<void>((resolve) => setImmediate(resolve));
    while (this.queue.length > 0 && !this.paused) {
      const batch = this.queue.shift()!;
      this.lastDone = batch.done;
      try {
        const bytes = encodeLines(batch);
        this.handle ??= await fs.open(this.filename, "a", this.mode);
        for (let at = 0; at < bytes.length; ) at += (await this.handle.write(bytes, at, bytes.length - at)).bytesWritten;
        this.appends += 1;
        let at = this.size;
        this.size += bytes.length;
        for (let i = 0; i < batch.owners.length; i += 1) {
          const owner = batch.owners[i];
          if (owner !== undefined) this.onPlaced(owner, batch.versions[i]!, at, batch.bytes[i]! - 1);
          at += batch.bytes[i]!;
        }
        if (batch.captured) this.captured?.push(batch);
        batch.resolve();
      } catch (error) {
        // Opened again for the next append, whatever became of this one; a
        // part of it may be in the file, so the size is the file's.
        await this.closeFile();
        this.size = await fs.stat(this.filename).then((stat) => stat.size, () => this.size);
        this.onError(error);
        batch.reject(error);
      }
    }
    this.writing = undefined;
  }
}

/** The batch's lines as UTF-8, each followed by its newline, written straight into one buffer (no joined copy of the text). */
function encodeLines(batch: Batch): Buffer {
  const bytes = Buffer.allocUnsafe(batch.size);
  let at = 0;
  for (const line of batch.lines) {
    at += bytes.write(line, at, "utf8");
    bytes[at] = 0x0a;
    at += 1;
  }
  return bytes;
}
