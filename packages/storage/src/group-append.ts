// fs.promises looked up at each call, so that a test can count the appends.
import { promises as fs } from "node:fs";

// Group commit for a datafile. NeDB appends each write's lines to its file
// before it runs the next write of the collection, so a collection takes one
// open/append/close per write, one at a time: about 400 creates a second
// through the API, with the disk idle between appends (bench/README.md).
// Here NeDB's per-write append only queues the lines; one append at a time
// writes everything queued since the last one began, and each operation of the
// store is acknowledged once the append holding its lines has finished. Under
// load, one append carries the lines of many writes.
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

export class GroupAppender {
  /** Lines queued since the append in flight began, and the promise of their append. */
  private open: Batch | undefined;
  /** The append in flight, if any. */
  private writing: Promise<void> | undefined;

  constructor(
    private readonly filename: string,
    private readonly mode: number,
    /** Told when an append fails: memory then holds writes the file does not. */
    private readonly onError: (error: unknown) => void,
  ) {}

  /** Queues lines (each ending in a newline) for the next append. */
  enqueue(lines: string): void {
    if (lines.length === 0) return;
    if (this.open === undefined) {
      let resolve!: () => void;
      let reject!: (error: unknown) => void;
      const done = new Promise<void>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      // A batch nobody waits for (a write whose caller went away) must not be an unhandled rejection.
      done.catch(() => undefined);
      this.open = { lines: [], done, resolve, reject };
    }
    this.open.lines.push(lines);
    if (this.writing === undefined) this.writing = this.drain();
  }

  /** Resolves once everything queued so far is in the file; rejects if its append failed. */
  durable(): Promise<void> {
    return this.open?.done ?? this.lastDone;
  }

  private lastDone: Promise<void> = Promise.resolve();

  private async drain(): Promise<void> {
    // Start on the next turn so that writes applied in this one join the first append.
    await new Promise<void>((resolve) => setImmediate(resolve));
    while (this.open !== undefined) {
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
