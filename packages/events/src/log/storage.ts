// Where the in-process bus keeps its topics and its groups' positions: in
// memory (memory.ts) or in a directory (directory.ts). The bus itself
// (in-process.ts) is the same for both.

import type { Partition } from "./partition.js";

/** Per group, per topic, the next offset to deliver in each partition. */
export type GroupPositions = Map<string, Map<string, number[]>>;

export interface LogStorage {
  /** The topics that exist (for a directory: also those created by earlier runs). */
  readonly topics: ReadonlyMap<string, Partition[]>;
  /** Committed positions (for a directory: as the last run left them). */
  readonly groups: GroupPositions;
  /** Creates a topic with this many partitions; resolves to the existing one if it exists. */
  createTopic(topic: string, partitions: number): Promise<Partition[]>;
  /** A group's positions moved (an event handled, a new group placed): commit them soon. */
  positionsChanged(group: string): void;
  /** Commits the positions now (a subscription stopping). */
  commit(): Promise<void>;
  /** Finishes pending writes, commits, releases what it holds. */
  close(): Promise<void>;
}
