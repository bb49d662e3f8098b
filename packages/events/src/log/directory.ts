// The durable storage of the in-process bus: a directory owned by one process.
//
//   <dir>/.lock                                  who holds it: pid, start time, boot id (@emailsvc/dir-lock)
//   <dir>/groups.json                            committed positions of every group
//   <dir>/topics/<topic>/<partition>/<base>.log  the segment files (file-partition.ts)
//   <dir>/creating/                              topics being created (renamed into topics/ when whole)
//
// Positions: a handled event moves its group's position in memory; the
// positions are written to groups.json (a temporary file renamed over it, so
// a crash leaves the old or the new file, never half of one) at most
// `commitIntervalMs` after a change, when a subscription stops, and on close.
// A crash therefore redelivers at most the events handled in the last
// `commitIntervalMs` (plus the one in flight); a clean stop redelivers nothing.
//
// Retention: a closed segment is deleted once every group that consumes its
// topic has passed it. The active segment is closed for that when every such
// group has handled all of it, or once its first event is `segmentMaxAgeMs`
// old: events carry subscriber ids, which an erasure must not leave on disk
// for as long as a quiet partition takes to fill 8 MiB (issue 16, defect
// 11d). Beyond `retentionMs` of age, or `retentionBytes` per topic, the
// oldest segments go even if a group has not handled them (with a warning),
// which bounds what a stopped consumer can keep. A group that has not consumed
// for `groupRetentionMs` (counted from the later of its last commit and this
// start) is forgotten, as Kafka forgets idle groups' offsets.

import { randomBytes } from "node:crypto";
import { mkdir, open, readdir, readFile, rename, rm } from "node:fs/promises";
import * as path from "node:path";
import { lockDir, type DirLock } from "@emailsvc/dir-lock";
import { errorMessage, isTopicName, type BusLogEntry } from "../shared.js";
import { FilePartition, syncDir, type FsyncPolicy } from "./file-partition.js";
import type { Partition } from "./partition.js";
import type { GroupPositions, LogStorage } from "./storage.js";

export interface DirectoryOptions {
  dir: string;
  fsync: FsyncPolicy;
  fsyncIntervalMs: number;
  commitIntervalMs: number;
  segmentBytes: number;
  /** The active segment is closed once its first event is this old (ms). */
  segmentMaxAgeMs: number;
  retentionBytes: number;
  /** Segments whose last event is this old (ms) are deleted, handled or not. */
  retentionMs: number;
  groupRetentionMs: number;
  /** How often retention runs besides after every new segment. */
  retentionCheckMs: number;
  /** How long to wait for another process holding the directory (lockDir's waitMs). */
  lockWaitMs?: number;
  warn: (message: string, fields: BusLogEntry["fields"]) => void;
  /** Whether a group has a subscription in this process right now (never forgotten then). */
  isActive: (group: string) => boolean;
}

const GROUPS_FILE = "groups.json";
const GROUPS_FORMAT = 1;
const TOPICS_DIR = "topics";
/** Where a topic's directory is built before it is renamed into TOPICS_DIR. */
const CREATING_DIR = "creating";

interface GroupsFile {
  format: number;
  groups: Record<string, { seen: number; topics: Record<string, number[]> }>;
}

/** Bus directories open in this process: a second bus on one would corrupt it as surely as a second process. */
const openDirs = new Set<string>();

export class DirectoryStorage implements LogStorage {
  private readonly partitionsOf = new Map<string, FilePartition[]>();
  private readonly creating = new Map<string, Promise<Partition[]>>();
  /** When each group last committed (ms); persisted. */
  private readonly seen = new Map<string, number>();
  private readonly touched = new Set<string>();
  private readonly openedAt = Date.now();
  private commitTimer: NodeJS.Timeout | undefined;
  private committing: Promise<void> = Promise.resolve();
  private retaining: Promise<void> | undefined;
  private readonly timers: NodeJS.Timeout[] = [];
  private closing: Promise<void> | undefined;

  private constructor(
    private readonly options: DirectoryOptions,
    private readonly lock: DirLock,
    readonly groups: GroupPositions,
  ) {}

  get topics(): ReadonlyMap<string, Partition[]> {
    return this.partitionsOf;
  }

  static async open(options: DirectoryOptions): Promise<DirectoryStorage> {
    const dir = path.resolve(options.dir);
    if (openDirs.has(dir)) throw new Error(`event bus ${dir} is already open in this process`);
    await mkdir(path.join(dir, TOPICS_DIR), { recursive: true });
    // Topics whose creation a crash cut off were never created.
    await rm(path.join(dir, CREATING_DIR), { recursive: true, force: true });
    openDirs.add(dir);
    let lock: DirLock | undefined;
    let storage: DirectoryStorage | undefined;
    try {
      lock = await lockDir(dir, "event bus", options.lockWaitMs !== undefined ? { waitMs: options.lockWaitMs } : {});
      const { groups, seen } = await loadGroups(dir, options);
      storage = new DirectoryStorage({ ...options, dir }, lock, groups);
      for (const [group, at] of seen) storage.seen.set(group, at);
      await storage.loadTopics();
      storage.placeGroups();
    } catch (error) {
      await storage?.closePartitions().catch(() => undefined);
      await lock?.release();
      openDirs.delete(dir);
      throw error;
    }
    // No retention pass right away: the groups that will subscribe in a moment
    // (one whose position was lost among them) must find their events first.
    storage.startTimers();
    return storage;
  }

  private get topicsDir(): string {
    return path.join(this.options.dir, TOPICS_DIR);
  }

  private partitionOptions(topic: string, partition: number) {
    return {
      dir: path.join(this.topicsDir, topic, String(partition)),
      topic,
      partition,
      segmentBytes: this.options.segmentBytes,
      fsync: this.options.fsync,
      onRoll: () => void this.retain(),
      warn: this.options.warn,
    };
  }

  private async loadTopics(): Promise<void> {
    for (const name of await readdir(this.topicsDir)) {
      if (!isTopicName(name)) continue;
      const entries = await readdir(path.join(this.topicsDir, name));
      const count = entries.filter((entry) => /^\d+$/.test(entry)).length;
      for (let p = 0; p < count; p++) {
        if (!entries.includes(String(p))) {
          throw new Error(`event bus ${this.options.dir}: topic ${name} lacks partition ${p}; the directory was changed by hand`);
        }
      }
      if (count === 0) continue;
      const partitions: FilePartition[] = [];
      this.partitionsOf.set(name, partitions);
      for (let p = 0; p < count; p++) partitions.push(await FilePartition.open(this.partitionOptions(name, p)));
    }
  }

  /**
   * Positions beyond the end of a log (its tail lost to a power loss while
   * groups.json survived) are moved back to the end, so that the events
   * published from now on, which get those offsets again, are not skipped.
   */
  private placeGroups(): void {
    for (const [group, topics] of this.groups) {
      for (const [topic, positions] of topics) {
        const partitions = this.partitionsOf.get(topic);
        if (!partitions) continue;
        positions.length = partitions.length;
        partitions.forEach((partition, p) => {
          const position = positions[p];
          if (position === undefined || !Number.isSafeInteger(position) || position < 0) positions[p] = partition.start;
          else if (position > partition.end) {
            this.options.warn("group position beyond the end of the log (its tail was lost); resuming at the end", {
              group,
              topic,
              partition: p,
              position,
              end: partition.end,
            });
            positions[p] = partition.end;
          }
        });
      }
    }
  }

  async createTopic(topic: string, partitions: number): Promise<Partition[]> {
    const existing = this.partitionsOf.get(topic);
    if (existing) return existing;
    let creating = this.creating.get(topic);
    if (!creating) {
      creating = this.create(topic, partitions).finally(() => this.creating.delete(topic));
      this.creating.set(topic, creating);
    }
    return creating;
  }

  /** Builds the topic's directory under a temporary name and renames it: a topic exists whole or not at all. */
  private async create(topic: string, count: number): Promise<Partition[]> {
    const building = path.join(this.options.dir, CREATING_DIR, `${topic}-${randomBytes(4).toString("hex")}`);
    for (let p = 0; p < count; p++) {
      const dir = path.join(building, String(p));
      await mkdir(dir, { recursive: true });
      await FilePartition.create({ ...this.partitionOptions(topic, p), dir });
    }
    await rename(building, path.join(this.topicsDir, topic));
    await syncDir(this.topicsDir);
    const partitions: FilePartition[] = [];
    for (let p = 0; p < count; p++) partitions.push(await FilePartition.open(this.partitionOptions(topic, p)));
    this.partitionsOf.set(topic, partitions);
    return partitions;
  }

  positionsChanged(group: string): void {
    this.touched.add(group);
    this.scheduleCommit();
  }

  private scheduleCommit(): void {
    if (this.commitTimer || this.closing) return;
    this.commitTimer = setTimeout(() => {
      this.commitTimer = undefined;
      this.commit().catch((error: unknown) => this.options.warn("committing group positions failed; retrying", { error: errorMessage(error) }));
    }, this.options.commitIntervalMs);
    this.commitTimer.unref();
  }

  /** Writes groups.json now; one write at a time, each with the positions as they are when it starts. */
  commit(): Promise<void> {
    const run = this.committing.then(() => this.writeGroups(this.options.fsync === "always"));
    this.committing = run.catch(() => undefined);
    return run;
  }

  private async writeGroups(durable: boolean): Promise<void> {
    const now = Date.now();
    for (const group of this.touched) this.seen.set(group, now);
    this.touched.clear();
    const content: GroupsFile = { format: GROUPS_FORMAT, groups: {} };
    for (const [group, topics] of this.groups) {
      content.groups[group] = { seen: this.seen.get(group) ?? now, topics: Object.fromEntries(topics) };
    }
    const file = path.join(this.options.dir, GROUPS_FILE);
    const temporary = `${file}.tmp`;
    const handle = await open(temporary, "w");
    try {
      await handle.writeFile(JSON.stringify(content));
      if (durable) await handle.datasync();
    } finally {
      await handle.close();
    }
    await rename(temporary, file);
    if (durable) await syncDir(this.options.dir);
  }

  /** One retention pass at a time; a pass asked for meanwhile is covered by the one running. */
  private retain(): Promise<void> {
    if (this.closing) return Promise.resolve();
    this.retaining ??= this.retainOnce()
      .catch((error: unknown) => this.options.warn("log retention failed", { error: errorMessage(error) }))
      .finally(() => {
        this.retaining = undefined;
      });
    return this.retaining;
  }

  private async retainOnce(): Promise<void> {
    const now = Date.now();
    for (const group of [...this.groups.keys()]) {
      const idleSince = Math.max(this.seen.get(group) ?? 0, this.openedAt);
      if (!this.options.isActive(group) && !this.touched.has(group) && now - idleSince > this.options.groupRetentionMs) {
        this.groups.delete(group);
        this.seen.delete(group);
        this.options.warn("forgot a consumer group that has not consumed for longer than the group retention", {
          group,
          idle_ms: now - idleSince,
        });
        this.scheduleCommit();
      }
    }
    const { segmentMaxAgeMs, retentionMs } = this.options;
    for (const [topic, partitions] of this.partitionsOf) {
      const capBytes = this.options.retentionBytes / partitions.length;
      for (let p = 0; p < partitions.length; p++) {
        const partition = partitions[p]!;
        const consumers = [...this.groups].filter(([, topics]) => topics.has(topic));
        const floor = Math.min(partition.end, ...consumers.map(([, topics]) => topics.get(topic)![p] ?? partition.start));
        // Handled by every group, or old. A topic no group consumes has nobody to keep its events for:
        // its active segment rolls after segmentMaxAgeMs and goes at the next pass.
        await partition.rollIf(
          (active) => (consumers.length > 0 && active.end <= floor) || now - active.firstAt >= segmentMaxAgeMs || now - active.lastAt >= retentionMs,
        );
        await partition.trimHead((segmentEnd, _bytes, retained, lastAt) => {
          if (segmentEnd <= floor) return true;
          const expired = now - lastAt >= retentionMs;
          if (!expired && retained <= capBytes) return false;
          this.options.warn(
            expired
              ? "events older than the log's retention: deleting events some groups have not handled yet"
              : "topic over its retention size: deleting events some groups have not handled yet",
            {
              topic,
              partition: p,
              up_to_offset: segmentEnd,
              groups: consumers
                .filter(([, topics]) => (topics.get(topic)![p] ?? 0) < segmentEnd)
                .map(([group]) => group)
                .join(","),
            },
          );
          return true;
        });
      }
    }
  }

  private startTimers(): void {
    const every = (ms: number, run: () => Promise<void>, what: string) => {
      const timer = setInterval(() => {
        run().catch((error: unknown) => this.options.warn(`${what} failed`, { error: errorMessage(error) }));
      }, ms);
      timer.unref();
      this.timers.push(timer);
    };
    if (this.options.fsync === "interval") {
      every(this.options.fsyncIntervalMs, () => Promise.all([...this.partitionsOf.values()].flat().map((p) => p.sync())).then(() => undefined), "fsync of the log");
    }
    every(this.options.retentionCheckMs, () => this.retain(), "log retention");
  }

  private async closePartitions(): Promise<void> {
    await Promise.all([...this.partitionsOf.values()].flat().map((partition) => partition.close()));
  }

  /** Writes what is queued, commits positions (fsynced: a clean stop survives a power loss), releases the directory. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.timers.forEach(clearInterval);
      if (this.commitTimer) clearTimeout(this.commitTimer);
      this.commitTimer = undefined;
      await this.retaining;
      await Promise.allSettled([...this.creating.values()]);
      try {
        await this.closePartitions();
        await this.committing;
        await this.writeGroups(true);
      } finally {
        await this.lock.release();
        openDirs.delete(this.options.dir);
      }
    })();
    return this.closing;
  }
}

/** Reads groups.json; a missing or unreadable one means no group has committed (with a warning for the latter). */
async function loadGroups(dir: string, options: DirectoryOptions): Promise<{ groups: GroupPositions; seen: Map<string, number> }> {
  const groups: GroupPositions = new Map();
  const seen = new Map<string, number>();
  const file = path.join(dir, GROUPS_FILE);
  await rm(`${file}.tmp`, { force: true });
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return { groups, seen };
    throw error;
  }
  try {
    const parsed = JSON.parse(text) as GroupsFile;
    if (parsed.format !== GROUPS_FORMAT || typeof parsed.groups !== "object" || parsed.groups === null) throw new Error("unknown format");
    for (const [group, entry] of Object.entries(parsed.groups)) {
      const topics = new Map<string, number[]>();
      for (const [topic, positions] of Object.entries(entry.topics ?? {})) {
        if (Array.isArray(positions)) topics.set(topic, positions.map(Number));
      }
      groups.set(group, topics);
      if (typeof entry.seen === "number") seen.set(group, entry.seen);
    }
  } catch (error) {
    options.warn("group positions unreadable: every group starts over from its subscription's start position", {
      file,
      error: errorMessage(error),
    });
    groups.clear();
    seen.clear();
  }
  return { groups, seen };
}
