import { close as closeCallback, fdatasync as fdatasyncCallback, open as openCallback, write as writeCallback } from "node:fs";
import { mkdir, open as openFile, readdir, unlink } from "node:fs/promises";
import * as path from "node:path";
import { promisify } from "node:util";
import { tenantFilePath } from "@emailsvc/storage";
import type { SandboxBody } from "./documents.js";

// The sandbox's bodies on the embedded store, appended to segment files of
// their tenant: <dir>/<account>/<mode>/<n>.bodies. A body's row holds its
// segment, offset and length. Issue 20: a file created per message (and one
// deleted per message past the cap) was a quarter of delivery's thread in a
// sandbox campaign, mostly kernel time; appending a batch of bodies is one
// system call.
//
//  - One open handle per tenant's current segment (closed after a few idle
//    seconds, reopened on the next write); the bodies kept while a write is
//    in flight go out together in the next one.
//  - A segment is rotated by size and by age, and deleted once no row points
//    into it (`reclaim`: after the cap's trim, the retention sweep and an
//    erasure). Bytes nothing points to (a message the cap or the retention
//    dropped, a body appended before a crash that came before its row, a
//    write cut by a crash) stay until their segment goes: within the
//    retention plus a segment's age, as the rows themselves.
//  - The body is appended before its row is written, and a segment still
//    waiting for rows (`pending`) or being written is never reclaimed: a row
//    never points at bytes that are not there. A restart starts a new
//    segment; what a crash cut at the tail of the last one is never read.
//  - Erasure (GDPR) overwrites the erased bodies' bytes with zeros at once,
//    and syncs them, before their rows go: unlinking alone would leave them
//    in a segment other messages keep for up to the retention.

/** Where a kept body is: a segment of its tenant, and its bytes there. */
export interface BodyLocation {
  segment: string;
  offset: number;
  length: number;
}

export interface SegmentSettings {
  /** A segment is rotated once it holds this many bytes (default 8 MiB). */
  segmentBytes?: number;
  /** ...or once it was started this long ago (default 1 h), so that dropped bytes do not stay for ever in a quiet tenant's segment. */
  segmentMaxAgeMs?: number;
  now?: () => number;
}

const DEFAULT_SEGMENT_BYTES = 8 * 1024 * 1024;
const DEFAULT_SEGMENT_MAX_AGE_MS = 3_600_000;
/** A tenant's handle is closed after this long without a write (no handle per tenant for ever). */
const IDLE_CLOSE_MS = 5_000;
/** Bodies per write. */
const MAX_BATCH = 200;
const SEGMENT_FILE = /^([1-9][0-9]{0,14})\.bodies$/;
const SEGMENT_NAME = /^[1-9][0-9]{0,14}$/;
const NEWLINE = 0x0a;

// The callback forms: every batch of sends writes once, so they skip what
// fs/promises adds (a FileHandle per open).
const openFd = promisify(openCallback);
const closeFd = promisify(closeCallback);
const syncFd = promisify(fdatasyncCallback);
const writeFd = promisify(writeCallback);

interface Queued {
  /** A record's parts, in order, as text. */
  parts: string[];
  /** Their bytes in UTF-8. */
  length: number;
  resolve: (location: BodyLocation) => void;
  reject: (err: unknown) => void;
}

interface Current {
  name: string;
  size: number;
  startedAt: number;
  /** Open while the tenant writes; closed when idle. */
  fd: number | undefined;
}

/** Every tenant's segments under one directory. */
export class BodySegments {
  private readonly tenants = new Map<string, TenantSegments>();
  private readonly segmentBytes: number;
  private readonly segmentMaxAgeMs: number;
  private readonly now: () => number;

  constructor(
    private readonly dir: string,
    settings: SegmentSettings = {},
  ) {
    this.segmentBytes = settings.segmentBytes ?? DEFAULT_SEGMENT_BYTES;
    this.segmentMaxAgeMs = settings.segmentMaxAgeMs ?? DEFAULT_SEGMENT_MAX_AGE_MS;
    this.now = settings.now ?? Date.now;
  }

  private of(tenant: string): TenantSegments {
    let segments = this.tenants.get(tenant);
    if (!segments) {
      // Throws for a tenant key no directory of ours could have.
      const dir = path.dirname(tenantFilePath(this.dir, tenant, "1.bodies"));
      segments = new TenantSegments(dir, this.segmentBytes, this.segmentMaxAgeMs, this.now);
      this.tenants.set(tenant, segments);
    }
    return segments;
  }

  /**
   * Appends an email's body to its tenant's current segment, and answers
   * where it is once it was written. The caller writes the row, then calls
   * `settled` whatever came of it.
   */
  append(tenant: string, emailId: string, body: SandboxBody): Promise<BodyLocation> {
    // A record: one line of JSON (the email id, the headers, the byte
    // lengths of the HTML and the text), then the HTML and the text as they
    // are. Not the whole body as JSON: escaping the HTML into a JSON string
    // cost more than the write. Encoded at the write, into the batch's one
    // buffer: a buffer of its own per body cost five times the encoding.
    const htmlBytes = Buffer.byteLength(body.html);
    const textBytes = Buffer.byteLength(body.text);
    const head = `${JSON.stringify({ id: emailId, headers: body.headers, html: htmlBytes, text: textBytes })}\n`;
    return this.of(tenant).append([head, body.html, body.text], Buffer.byteLength(head) + htmlBytes + textBytes);
  }

  /** The row of a body appended at `location` was written (or failed): from now on the rows alone say whether its segment is in use. */
  settled(tenant: string, location: BodyLocation): void {
    this.tenants.get(tenant)?.settle(location.segment);
  }

  /** The body of `emailId` at `location`; undefined when its bytes are gone, erased, or not that email's. */
  async read(tenant: string, emailId: string, location: BodyLocation): Promise<SandboxBody | undefined> {
    if (!SEGMENT_NAME.test(location.segment) || !(location.length > 0) || !(location.offset >= 0)) return undefined;
    let handle;
    try {
      handle = await openFile(tenantFilePath(this.dir, tenant, `${location.segment}.bodies`), "r");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw err;
    }
    try {
      const buffer = Buffer.allocUnsafe(location.length);
      const { bytesRead } = await handle.read(buffer, 0, location.length, location.offset);
      if (bytesRead !== location.length) return undefined;
      const headEnd = buffer.indexOf(0x0a);
      if (headEnd < 0) return undefined;
      const head = JSON.parse(buffer.toString("utf8", 0, headEnd)) as { id?: unknown; headers?: Record<string, string>; html?: unknown; text?: unknown };
      if (head.id !== emailId || typeof head.html !== "number" || typeof head.text !== "number" || headEnd + 1 + head.html + head.text !== location.length) return undefined;
      const htmlEnd = headEnd + 1 + head.html;
      return { html: buffer.toString("utf8", headEnd + 1, htmlEnd), text: buffer.toString("utf8", htmlEnd), headers: head.headers ?? {} };
    } catch (err) {
      if (err instanceof SyntaxError) return undefined; // zeros (erased) or bytes that are not a record
      throw err;
    } finally {
      await handle.close();
    }
  }

  /**
   * Overwrites these bodies' bytes with zeros, synced to the disk, before
   * the caller deletes their rows (erasure: the bytes must not outlive the
   * request in a segment other messages keep). A segment already gone is
   * skipped.
   */
  async erase(tenant: string, locations: readonly BodyLocation[]): Promise<void> {
    const bySegment = new Map<string, BodyLocation[]>();
    for (const location of locations) {
      if (!SEGMENT_NAME.test(location.segment)) continue;
      bySegment.set(location.segment, [...(bySegment.get(location.segment) ?? []), location]);
    }
    for (const [segment, located] of bySegment) {
      let fd: number;
      try {
        fd = await openFd(tenantFilePath(this.dir, tenant, `${segment}.bodies`), "r+");
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === "ENOENT") continue;
        throw err;
      }
      try {
        for (const { offset, length } of located) {
          if (!(length > 0) || !(offset >= 0)) continue;
          await writeFd(fd, Buffer.alloc(length), 0, length, offset);
        }
        await syncFd(fd);
      } finally {
        await closeFd(fd);
      }
    }
  }

  /**
   * Deletes the tenant's segments no row points into, as `inUse` (the
   * segments its rows name, counted after this call began) tells, except
   * one still being written or waiting for rows.
   */
  reclaim(tenant: string, inUse: () => Promise<ReadonlySet<string>>): Promise<void> {
    return this.of(tenant).reclaim(inUse);
  }

  /** The tenant's segments, oldest first (names are numbers, each past the last): the order its bodies were kept in. */
  async segmentsOf(tenant: string): Promise<string[]> {
    return [...(await this.of(tenant).segments())].sort((a, b) => Number(a) - Number(b));
  }

  /** The tenants that have a directory here (the sweep reclaims theirs too, also those this process never wrote for). */
  async tenantsOnDisk(): Promise<string[]> {
    const tenants: string[] = [];
    for (const account of await names(this.dir)) {
      for (const mode of await names(path.join(this.dir, account))) tenants.push(`${account}:${mode}`);
    }
    return tenants;
  }

  /** Waits for writes in flight and closes every handle. */
  async close(): Promise<void> {
    await Promise.allSettled([...this.tenants.values()].map((segments) => segments.close()));
  }
}

/** One tenant's segments: its current one, and which are still waiting for rows. */
class TenantSegments {
  /** Segment names in the directory (read once, then kept up to date). */
  private known: Promise<Set<string>> | undefined;
  private highest = 0;
  private current: Current | undefined;
  /** Bodies given a place in a segment whose rows are not yet written, per segment. */
  private readonly pending = new Map<string, number>();
  /** Bumped each time bodies are given a place: a reclaim that sees it move leaves the current segment alone. */
  private assignments = 0;
  private queue: Queued[] = [];
  private writing: Promise<void> | undefined;
  private idleTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly dir: string,
    private readonly segmentBytes: number,
    private readonly segmentMaxAgeMs: number,
    private readonly now: () => number,
  ) {}

  append(parts: string[], length: number): Promise<BodyLocation> {
    return new Promise((resolve, reject) => {
      this.queue.push({ parts, length, resolve, reject });
      // Started on the next turn: the sends that come in the meantime share the write.
      if (!this.writing) this.writing = new Promise<void>((done) => setImmediate(done)).then(() => this.drain());
    });
  }

  settle(segment: string): void {
    const left = (this.pending.get(segment) ?? 1) - 1;
    if (left > 0) this.pending.set(segment, left);
    else this.pending.delete(segment);
  }

  /** The segment names in the directory, as this process keeps them up to date. */
  segments(): Promise<ReadonlySet<string>> {
    return this.load();
  }

  private load(): Promise<Set<string>> {
    this.known ??= names(this.dir).then((files) => {
      const known = new Set<string>();
      for (const file of files) {
        const match = SEGMENT_FILE.exec(file);
        if (!match) continue;
        known.add(match[1]!);
        this.highest = Math.max(this.highest, Number(match[1]));
      }
      return known;
    });
    return this.known;
  }

  /** Writes what is queued, a batch at a time, until nothing is. */
  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, MAX_BATCH);
        try {
          await this.write(batch);
        } catch (err) {
          for (const queued of batch) queued.reject(err);
        }
      }
    } finally {
      this.writing = undefined;
      this.armIdleClose();
    }
  }

  private async write(batch: Queued[]): Promise<void> {
    const segment = await this.segmentFor();
    const fd = segment.fd!;
    // Places given now, before the write: from here the segment is pending until each row is settled.
    const locations: BodyLocation[] = [];
    let offset = segment.size;
    for (const { length } of batch) {
      locations.push({ segment: segment.name, offset, length });
      offset += length + 1;
    }
    const total = offset - segment.size;
    // The batch's records in one buffer (their lengths were counted as UTF-8 at the append), written at once.
    const bytes = Buffer.allocUnsafe(total);
    let at = 0;
    for (const { parts } of batch) {
      for (const part of parts) at += bytes.write(part, at);
      bytes[at++] = NEWLINE;
    }
    this.pending.set(segment.name, (this.pending.get(segment.name) ?? 0) + batch.length);
    this.assignments += 1;
    let written: number;
    try {
      written = at === total ? (await writeFd(fd, bytes, 0, total, segment.size)).bytesWritten : at;
      if (written !== total) throw new Error(`sandbox: a body segment took ${written} of ${total} bytes`);
    } catch (err) {
      // What it holds past `size` is unknown: the next batch starts a new segment, this one is reclaimed once unused.
      for (let i = 0; i < batch.length; i += 1) this.settle(segment.name);
      this.seal();
      throw err;
    }
    segment.size = offset;
    for (let i = 0; i < batch.length; i += 1) batch[i]!.resolve(locations[i]!);
  }

  /** The segment to append to, with its handle open: the current one, or a new one when it is full, old or none. */
  private async segmentFor(): Promise<Current> {
    const known = await this.load();
    const current = this.current;
    if (current && current.size < this.segmentBytes && this.now() - current.startedAt < this.segmentMaxAgeMs) {
      if (current.fd !== undefined) return current;
      try {
        current.fd = await openFd(path.join(this.dir, `${current.name}.bodies`), "r+");
        return current;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
        // Deleted by hand: a new one.
      }
    }
    this.seal();
    let name = String(++this.highest);
    for (let attempt = 0; ; attempt += 1) {
      const started: Current = { name, size: 0, startedAt: this.now(), fd: undefined };
      known.add(name);
      this.current = started;
      try {
        started.fd = await openFd(path.join(this.dir, `${name}.bodies`), "wx", 0o600);
        return started;
      } catch (err) {
        this.current = undefined;
        const code = (err as NodeJS.ErrnoException).code;
        if (attempt >= 3 || (code !== "EEXIST" && code !== "ENOENT")) {
          known.delete(name);
          throw err;
        }
        if (code === "EEXIST") {
          // A file of that name is there (left known, for reclaim): the next name.
          name = String(++this.highest);
        } else {
          // The directory is not there (yet, or any more).
          known.delete(name);
          await mkdir(this.dir, { recursive: true });
        }
      }
    }
  }

  /** No more appends to the current segment (full, old, failed, or unused). */
  private seal(): void {
    const fd = this.current?.fd;
    this.current = undefined;
    if (fd !== undefined) void closeFd(fd).catch(() => {});
  }

  private armIdleClose(): void {
    if (this.idleTimer) {
      this.idleTimer.refresh();
      return;
    }
    this.idleTimer = setTimeout(() => {
      this.idleTimer = undefined;
      const current = this.current;
      if (this.writing || this.queue.length > 0 || current?.fd === undefined) return;
      const fd = current.fd;
      current.fd = undefined;
      void closeFd(fd).catch(() => {});
    }, IDLE_CLOSE_MS);
    this.idleTimer.unref();
  }

  async reclaim(inUse: () => Promise<ReadonlySet<string>>): Promise<void> {
    const known = await this.load();
    // What may go is decided from before the rows are counted: a segment that
    // was not current then gets no more bodies, and one with nothing pending
    // then has all its rows written, so the count sees them.
    const currentThen = this.current?.name;
    const assignmentsThen = this.assignments;
    const candidates = [...known].filter((name) => !this.pending.has(name));
    if (candidates.length === 0) return;
    const used = await inUse();
    for (const name of candidates) {
      if (used.has(name) || this.pending.has(name)) continue;
      if (name === currentThen || name === this.current?.name) {
        // The current segment goes only when nothing was appended or is being appended meanwhile.
        if (this.assignments !== assignmentsThen || this.writing || this.queue.length > 0 || this.current?.name !== name) continue;
        this.seal();
      }
      known.delete(name);
      await removeFile(path.join(this.dir, `${name}.bodies`));
    }
  }

  async close(): Promise<void> {
    while (this.writing) await this.writing;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
    const fd = this.current?.fd;
    if (this.current) this.current.fd = undefined;
    if (fd !== undefined) await closeFd(fd);
  }
}

/** Deletes a file; one already gone is no error. */
export async function removeFile(file: string): Promise<void> {
  try {
    await unlink(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
}

export async function names(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT" || (err as NodeJS.ErrnoException).code === "ENOTDIR") return [];
    throw err;
  }
}
