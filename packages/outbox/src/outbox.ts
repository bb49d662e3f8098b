// The in-document outbox. A change is one single-document write that also
// appends an entry to the document's outbox for each side effect it implies
// (a bus event, an audit record, ...), marks the document `outbox_pending` and
// bumps its `version`. Right after the write, `afterWrite` carries the entries
// out and clears the outbox, guarded by the version; a periodic sweep finishes
// what a crash or a bus outage left. No multi-document transaction is needed
// (DESIGN.md: FerretDB v1 has none), and a change can never happen without its
// effects: they may repeat (a crash after an effect, before the clear), so each
// must be idempotent, but they are never lost.

import { encodeAnyEvent, type AnyEvent, type EventBus, type OutgoingEvent, type Topic } from "@emailsvc/events";
import type { AcrossTenants, Filter, TenantDoc, Update } from "@emailsvc/storage";
import { Periodic } from "./periodic.js";

/** One pending side effect of a change, kept in the changed document until carried out. */
export interface OutboxEntry {
  /**
   * `evt_…`: the id of what the entry leads to (the bus event's event_id, an
   * audit record's _id), so that a repeat after a crash is recognisable.
   */
  id: string;
  /** When the change happened (ms). */
  at: number;
  /** Headers for the entry's bus event besides ours (room for the change's `traceparent`). */
  headers?: Record<string, string>;
}

/** What the kit keeps in every document that has an outbox. */
export interface OutboxFields<E extends OutboxEntry> {
  /** Bumped by every write that appends entries: the clear is guarded by it. */
  version: number;
  outbox: E[];
  /** True while entries wait; the sweep's index starts with it. */
  outbox_pending: boolean;
  /** Set by every write that appends entries: the sweep leaves younger outboxes to their own write's flush. */
  updated_at: number;
}

export type OutboxDoc<E extends OutboxEntry = OutboxEntry> = TenantDoc & OutboxFields<E>;

/**
 * The outbox parts of the writes of one document type `D` (as a use case sees
 * it: a tenant's view, without `tenant`). Made once per document type, so that
 * the update a change gives is checked against `D`'s fields.
 */
export interface OutboxWrites<D extends OutboxFields<E>, E extends OutboxEntry> {
  /** The outbox fields of a new document whose creation implies `entries`. */
  created(entries: E[]): Pick<OutboxFields<E>, "version" | "outbox" | "outbox_pending">;
  /** `update` with `entries` appended to the outbox, in the same single-document write. */
  appended(update: Update<D>, entries: E[], at: number): Update<D>;
}

export function outboxWrites<D extends OutboxFields<E>, E extends OutboxEntry = D["outbox"][number]>(): OutboxWrites<D, E> {
  return {
    created: (entries) => ({ version: 1, outbox: entries, outbox_pending: entries.length > 0 }),
    appended(update, entries, at) {
      // Merged operator by operator; the kit's fields are its own, so nothing the change sets is overwritten.
      const parts = update as { $set?: object; $push?: object; $inc?: object };
      return {
        ...parts,
        $set: { ...parts.$set, outbox_pending: true, updated_at: at },
        $push: { ...parts.$push, outbox: { $each: entries } },
        $inc: { ...parts.$inc, version: 1 },
      } as unknown as Update<D>;
    },
  };
}

/** What the outbox reports: warnings, with ids only. */
export interface OutboxLogger {
  warn(fields: Record<string, unknown>, message: string): void;
}

/** When and how often the sweep runs; each has a default. */
export interface OutboxSettings {
  /** The time (ms); tests pass their own. Default `Date.now`. */
  clock?: (() => number) | undefined;
  /** How often the sweep runs (default 2 s). */
  sweepIntervalMs?: number | undefined;
  /** A pending outbox younger than this is left to its own write's flush (default 5 s). */
  sweepGraceMs?: number | undefined;
  /** Documents one sweep takes at most (default 100). */
  sweepBatch?: number | undefined;
}

export interface OutboxOptions<D extends OutboxDoc<E>, E extends OutboxEntry> extends OutboxSettings {
  /**
   * The documents that carry outboxes, across tenants: the sweep looks for
   * pending ones everywhere, and a flush finishes whichever document it is
   * given (each names its tenant; events and effects are that tenant's).
   */
  documents: AcrossTenants<D>;
  bus: EventBus;
  logger: OutboxLogger;
  /** The bus event an entry stands for, or null when it has none. Its id and time come from the entry. */
  event(entry: E, doc: D): AnyEvent | null;
  /**
   * The service's own effect of an entry (e.g. an audit record), run before the
   * entry's event is published. It repeats after a crash: make it idempotent.
   */
  effect?(entry: E, doc: D): Promise<void>;
  /**
   * Once every entry of the document is done: "clear" its outbox (the default)
   * or "delete" the document (a tombstone that only waited for its events).
   * May do work of its own first (idempotent, as effects).
   */
  complete?(doc: D): Promise<"clear" | "delete">;
}

/** A flush goes again after a concurrent change this many times, then leaves the rest to the sweep. */
const MAX_PASSES = 5;

/**
 * Carries out outboxes: right after a write (`afterWrite`), and in a periodic
 * sweep for what a crash or a bus outage left. Flushes of one document run one
 * at a time; one that waited reads the document again, since the flush before
 * it may have done and cleared what its copy holds.
 */
export class Outbox<D extends OutboxDoc<E>, E extends OutboxEntry = D["outbox"][number]> {
  /** The collection seen as the kit's own fields: the kit reads and writes nothing else. */
  private readonly docs: AcrossTenants<OutboxDoc>;
  private readonly inFlight = new Map<string, Promise<void>>();
  private readonly clock: () => number;
  private readonly periodic: Periodic;

  constructor(private readonly options: OutboxOptions<D, E>) {
    this.docs = options.documents as unknown as AcrossTenants<OutboxDoc>;
    this.clock = options.clock ?? Date.now;
    this.periodic = new Periodic(() => this.sweep(), options.sweepIntervalMs ?? 2000, (err) =>
      options.logger.warn({ error: describe(err) }, "outbox sweep failed"),
    );
  }

  /**
   * Carries out the outbox of `doc` (as the write that filled it returned it)
   * right away. A failure is logged and left to the sweep: the change itself
   * is stored, so the caller's request succeeded.
   */
  async afterWrite(doc: D): Promise<void> {
    try {
      await this.flush(doc);
    } catch (err) {
      this.options.logger.warn({ doc_id: doc._id, error: describe(err) }, "outbox flush failed; the sweep will finish it");
    }
  }

  /** Carries out the outbox of `doc`; rejects when an effect or the bus fails (nothing is lost: the entries stay). */
  flush(doc: D): Promise<void> {
    const key = doc._id;
    const before = this.inFlight.get(key);
    const job = before
      ? before
          .catch(() => undefined)
          .then(() => this.docs.findOne({ _id: doc._id, tenant: doc.tenant }))
          .then((fresh) => (fresh ? this.passes(fresh as D) : undefined))
      : this.passes(doc);
    const tracked = job.finally(() => {
      if (this.inFlight.get(key) === tracked) this.inFlight.delete(key);
    });
    this.inFlight.set(key, tracked);
    return tracked;
  }

  private async passes(first: D): Promise<void> {
    let doc: D | null = first;
    // Entries carried out by an earlier pass of this flush are not done again.
    const done = new Set<string>();
    for (let pass = 0; doc !== null && doc.outbox_pending && pass < MAX_PASSES; pass += 1) {
      const entries: E[] = doc.outbox.filter((entry) => !done.has(entry.id));
      if (this.options.effect) for (const entry of entries) await this.options.effect(entry, doc);
      await this.publish(doc, entries);
      for (const entry of entries) done.add(entry.id);
      const ending = this.options.complete ? await this.options.complete(doc) : "clear";
      const guard: Filter<OutboxDoc> = { _id: doc._id, tenant: doc.tenant, version: doc.version };
      if (ending === "delete") {
        if (await this.docs.deleteOne(guard)) return;
      } else if (await this.docs.updateOne(guard, { $set: { outbox: [], outbox_pending: false } })) {
        return;
      }
      // A change came in between (the version moved): go again with what is stored now.
      doc = (await this.docs.findOne({ _id: first._id, tenant: first.tenant })) as D | null;
    }
  }

  /** One batch per topic, topics in the order of their first entry (so a send request goes before its status). */
  private async publish(doc: D, entries: E[]): Promise<void> {
    const byTopic = new Map<Topic, OutgoingEvent[]>();
    for (const entry of entries) {
      const event = this.options.event(entry, doc);
      if (event === null) continue;
      const batch = byTopic.get(event.topic) ?? [];
      batch.push(encodeAnyEvent(event, { eventId: entry.id, tenant: doc.tenant, occurredAt: entry.at, headers: entry.headers }));
      byTopic.set(event.topic, batch);
    }
    for (const [topic, batch] of byTopic) await this.options.bus.publish(topic, batch);
  }

  /** One pass over outboxes left pending past the grace; returns how many documents it finished. */
  async sweep(): Promise<number> {
    const before = this.clock() - (this.options.sweepGraceMs ?? 5000);
    const pending = await this.docs.find(
      { outbox_pending: true, updated_at: { $lt: before } },
      { limit: this.options.sweepBatch ?? 100 },
    );
    let finished = 0;
    const failed: string[] = [];
    for (const doc of pending) {
      try {
        await this.flush(doc as D);
        finished += 1;
      } catch (err) {
        failed.push(doc._id);
        if (failed.length === 1) this.options.logger.warn({ doc_id: doc._id, error: describe(err) }, "outbox sweep could not finish a document");
      }
    }
    if (failed.length > 1) this.options.logger.warn({ failed: failed.length, finished }, "outbox sweep left documents for the next pass");
    return finished;
  }

  /** How many documents have entries waiting: the backlog, for a metric. */
  backlog(): Promise<number> {
    return this.docs.count({ outbox_pending: true });
  }

  /** Starts the periodic sweep (its first pass at once). */
  start(): void {
    this.periodic.start();
  }

  /** Stops the sweep and waits for every flush under way. */
  async stop(): Promise<void> {
    await this.periodic.stop();
    await Promise.allSettled([...this.inFlight.values()]);
  }
}

/** An error for a log line: its class and message, any address in it replaced. */
function describe(err: unknown): string {
  const text = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  return text.replace(/[^\s@<>"'()[\]]+@[^\s@<>"'()[\]]+/g, "<address>").slice(0, 300);
}
