// fs.promises looked up at each call, so that a test can count the appends.
import { promises as fs } from "node:fs";

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

interface Batch {
  lines: string[];
  /** Queued after a rewrite's snapshot: its lines go to the new file too (see rewrite). */
  captured: boolean;
  done: Promise<void>;
  resolve: () => void;
  reject: (error: unknown) => void;
}

function newBatch(captured: boolean): Batch {
  let resolve!: () => void;
  let reject!: (error: unknown) => void;
  const done = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // A batch nobody waits for (a write whose caller went away) must not be an unhandled rejection.
  done.catch(() => undefined);
  return { lines: [], captured, done, resolve, reject };
}

export class GroupAppender {
  /** Batches not yet appended, in order; new lines join the last one unless a rewrite's snapshot came after it. */
  private readonly queue: Batch[] = [];
  /** The append loop, while it runs. */
  private writing: Promise<void> | undefined;
  /** While a rewrite's last step (sync and rename) runs: lines wait in the queue. */
  private paused = false;
  /** While a rewrite runs: the lines appended to the old file since its snapshot, for the new one. */
  private captured: string[] | undefined;
  private lastDone: Promise<void> = Promise.resolve();

  constructor(
    private readonly filename: string,
    private readonly mode: number,
    /** Told when an append fails: memory then holds writes the file does not. */
    private readonly onError: (error: unknown) => void,
  ) {}

  /** Queues lines (each ending in a newline) for the next append. */
  enqueue(lines: string): void {
    if (lines.length === 0) return;
    let batch = this.queue[this.queue.length - 1];
    const capturing = this.captured !== undefined;
    if (batch === undefined || batch.captured !== capturing) {
      batch = newBatch(capturing);
      this.queue.push(batch);
    }
    batch.lines.push(lines);
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
   * flight and gets the kept lines to add before the rename. Appends queued
   * meanwhile wait, and go to the new file. If anything fails, the old file
   * stays, whole: it has every line.
   */
  async rewrite(write: (finish: (last: (tail: readonly string[]) => Promise<void>) => Promise<void>) => Promise<void>): Promise<void> {
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
          this.captured = undefined;
          this.paused = false;
          if (this.queue.length > 0 && this.writing === undefined) this.writing = this.drain();
        }
      });
    } finally {
      this.captured = undefined;
    }
  }

  private async drain(): Promise<void> {
    // Start on the next turn so that writes applied in this one join the first append.
    await new Promise<void>((resolve) => setImmediate(resolve));
    while (this.queue.length > 0 && !this.paused) {
      const batch = this.queue.shift()!;
      this.lastDone = batch.done;
      try {
        const text = batch.lines.join("");
        await fs.appendFile(this.filename, text, { encoding: "utf8", mode: this.mode });
        if (batch.captured) this.captured?.push(text);
        batch.resolve();
      } catch (error) {
        this.onError(error);
        batch.reject(error);
      }
    }
    this.writing = undefined;
  }
}
