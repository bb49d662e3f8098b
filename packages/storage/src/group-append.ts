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
  done: Promise<void>;
  resolve: () => void;
  reject: (error: unknown) => void;
}

function newBatch(): Batch {
  let resolve!: () => void;
  let reject!: (error: unknown) => void;
  const done = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // A batch nobody waits for (a write whose caller went away) must not be an unhandled rejection.
  done.catch(() => undefined);
  return { lines: [], done, resolve, reject };
}

export class GroupAppender {
  /** Lines queued since the append in flight began, and the promise of their append. */
  private open: Batch | undefined;
  /** The append loop, while it runs. */
  private writing: Promise<void> | undefined;
  /** While a rewrite of the file runs (exclusive): lines wait in `open`. */
  private paused = false;
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
    if (this.open === undefined) this.open = newBatch();
    this.open.lines.push(lines);
    if (this.writing === undefined && !this.paused) this.writing = this.drain();
  }

  /** Resolves once everything queued so far is in the file; rejects if its append failed. */
  durable(): Promise<void> {
    return this.open?.done ?? this.lastDone;
  }

  /**
   * Runs `rewrite` (a rewrite of the whole file) with no append in flight or
   * started meanwhile. `rewrite` is called synchronously once the append in
   * flight is done, and must take its snapshot of the documents before it
   * first awaits: the lines queued until then are in that snapshot, so they
   * are not appended but acknowledged when the rewrite is done; lines queued
   * after it are appended to the new file. If the rewrite fails, the old file
   * stays and the lines it took are appended to it as usual, before the later ones.
   */
  async exclusive(rewrite: () => Promise<void>): Promise<void> {
    this.paused = true;
    try {
      while (this.writing !== undefined) await this.writing;
      const taken = this.open;
      this.open = undefined;
      if (taken !== undefined) this.lastDone = taken.done;
      try {
        await rewrite();
      } catch (error) {
        if (taken !== undefined) {
          // Lines queued while the rewrite ran (TypeScript cannot see that the await let them in).
          const later = this.open as Batch | undefined;
          if (later !== undefined) {
            taken.lines.push(...later.lines);
            taken.done.then(later.resolve, later.reject);
          }
          this.open = taken;
        }
        throw error;
      }
      taken?.resolve();
    } finally {
      this.paused = false;
      if (this.open !== undefined && this.writing === undefined) this.writing = this.drain();
    }
  }

  private async drain(): Promise<void> {
    // Start on the next turn so that writes applied in this one join the first append.
    await new Promise<void>((resolve) => setImmediate(resolve));
    while (this.open !== undefined && !this.paused) {
      const batch = this.open;
      this.open = undefined;
      this.lastDone = batch.done;
      try {
        await fs.appendFile(this.filename, batch.lines.join(""), { encoding: "utf8", mode: this.mode });
        batch.resolve();
      } catch (error) {
        this.onError(error);
        batch.reject(error);
      }
    }
    this.writing = undefined;
  }
}
