import { observedGauge } from "@emailsvc/telemetry";
import { publishEvents, withTraceparent, type EncodedEvent, type EventBus, type Topic } from "@emailsvc/events";
import type { CrossTenantCollection, TenantCollection, TenantFilter, TenantUpdate } from "@emailsvc/storage";
import type { OutboxDoc, OutboxEntry } from "./document.js";

const BACKLOG = () =>
  observedGauge("outbox_pending_documents", "Documents whose outbox (events, audit records) is not carried out yet.", ["service"]);

/** Where the relay reports trouble; pino loggers fit. Fields are ids and error messages only. */
export interface RelayLogger {
  warn(fields: Record<string, unknown>, message: string): void;
}

/** What a use case needs of the relay: carry out the outbox its write just filled. */
export interface OutboxAfterWrite<D> {
  afterWrite(doc: D): Promise<void>;
  /** The same for many documents one write stored (an insertMany): their events in one batch per topic. */
  afterWriteMany(docs: readonly D[]): Promise<void>;
}

/** A periodic pass run after each outbox sweep (e.g. delivery's stalled-mail sweep). */
export interface RelayPass {
  name: string;
  run(): Promise<unknown>;
}

export interface OutboxRelayOptions<D extends OutboxDoc<E>, E extends OutboxEntry> {
  /**
   * The documents with outboxes, across tenants: the sweep finds pending
   * outboxes of every tenant; each document is then flushed through its own
   * tenant's collection.
   */
  documents: CrossTenantCollection<D>;
  bus: EventBus;
  logger: RelayLogger;
  /** The service's name: the label of its `outbox_pending_documents` metric. */
  name: string;
  /** The service's clock (ms); the sweep's grace is measured with it. */
  clock: () => number;
  /** The events an entry implies (none, one or several), encoded with the topic registry. */
  events(doc: D, entry: E): EncodedEvent[];
  /** Topics published first, in this order; each flush publishes one batch per topic. */
  topicOrder?: Topic[];
  /**
   * A service's own effect of an entry besides its events (an audit record),
   * run before the events are published. It must be idempotent (keyed by the
   * entry id): after a crash it runs again.
   */
  effect?(doc: D, entry: E, documents: TenantCollection<D>): Promise<void>;
  /**
   * The same effect for many entries at once (`afterWriteMany`: one store
   * round trip for a batch rather than one per entry); idempotent like
   * `effect`. Without it `afterWriteMany` runs `effect` per entry.
   */
  effects?(items: ReadonlyArray<{ doc: D; entry: E }>): Promise<void>;
  /**
   * Ends the outbox once every entry is carried out; resolves false when a
   * concurrent change won (the relay then reads the document again and goes
   * on with its new entries). Default: clear `outbox` and `outbox_pending`
   * guarded by `version`. Subscribers deletes a tombstone here instead.
   */
  complete?(doc: D, documents: TenantCollection<D>): Promise<boolean>;
  /** How often the sweep runs (default 2 s). */
  sweepIntervalMs?: number;
  /** A pending outbox younger than this (by `updated_at`) is left to the write that made it (default 5 s). */
  sweepGraceMs?: number;
  /** Documents one sweep takes (default 100). */
  sweepBatch?: number;
  /** Passes run after each sweep, on the same timer. */
  passes?: RelayPass[];
}

/**
 * The usual end of an outbox: cleared, guarded by the version the relay
 * carried out; false when a concurrent change appended entries meanwhile.
 */
export async function clearOutbox<D extends OutboxDoc>(doc: D, documents: TenantCollection<D>): Promise<boolean> {
  const cleared = await documents.updateOne(
    { _id: doc._id, version: doc.version } as TenantFilter<D>,
    { $set: { outbox: [], outbox_pending: false } } as TenantUpdate<D>,
  );
  return cleared !== null;
}

/** Passes of one flush before it leaves a document whose outbox keeps changing to the sweep. */
const MAX_PASSES = 5;

/**
 * Carries out the entries a change left in its document's outbox: the
 * service's own effects, then the events (one batch per topic), then clears
 * the outbox guarded by `version`. Flushes of one document run one at a time;
 * one that waited reads the document again, since the one before may have
 * carried out and cleared what its copy holds. A change is one
 * single-document write, so a crash anywhere leaves either no change or one
 * whose outbox the sweep finishes later: effects may repeat, never get lost.
 */
export class OutboxRelay<D extends OutboxDoc<E>, E extends OutboxEntry = D["outbox"][number]> implements OutboxAfterWrite<D> {
  private readonly inFlight = new Map<string, Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | undefined;
  private stopped = false;
  private stopObserving: (() => void) | undefined;

  constructor(private readonly options: OutboxRelayOptions<D, E>) {}

  /**
   * What a use case calls right after its write: carries out the outbox of
   * `doc` (as the write returned it). Never rejects: the change itself is done,
   * and a failure (bus or store down) is logged and left to the sweep.
   */
  async afterWrite(doc: D): Promise<void> {
    try {
      await this.flush(doc);
    } catch (err) {
      this.options.logger.warn({ document_id: doc._id, err: err instanceof Error ? err.message : String(err) }, "outbox flush deferred to sweep");
    }
  }

  /**
   * afterWrite for the documents one write just stored (delivery's batch
   * send, an import's batch of subscribers): the effects of every entry
   * (`effects` at once when given), the events of all of them in one publish
   * per topic, then their outboxes cleared by one guarded write per tenant
   * and version (as clearOutbox does). For documents whose outbox ends with
   * the usual clear: a service's own `complete` (a tombstone's) is not run
   * here, so do not pass such documents. A document changed meanwhile (the
   * send consumer took its email already) is flushed again on its own, its
   * effects repeated (they are idempotent) and its events carried out with
   * their ids (consumers drop repeats). Never rejects, as afterWrite:
   * failures are left to the sweep.
   */
  async afterWriteMany(docs: readonly D[]): Promise<void> {
    const pending = docs.filter((doc) => doc.outbox_pending);
    if (pending.length === 0) return;
    if (pending.length === 1) {
      await this.afterWrite(pending[0]!);
      return;
    }
    try {
      await this.carryOut(pending.flatMap((doc) => doc.outbox.map((entry) => ({ doc, entry }))));
      const groups = new Map<string, D[]>();
      for (const doc of pending) {
        const key = `${doc.tenant}|${doc.version}`;
        const group = groups.get(key);
        if (group) group.push(doc);
        else groups.set(key, [doc]);
      }
      for (const group of groups.values()) {
        const documents = this.scope(group[0]!);
        const ids = group.map((d) => d._id);
        const cleared = await documents.updateMany(
          { _id: { $in: ids }, version: group[0]!.version, outbox_pending: true } as TenantFilter<D>,
          { $set: { outbox: [], outbox_pending: false } } as TenantUpdate<D>,
        );
        if (cleared === ids.length) continue;
        // Some changed since (or were cleared by another flush): whatever is still pending is flushed on its own.
        const left = await documents.find({ _id: { $in: ids }, outbox_pending: true } as TenantFilter<D>);
        await Promise.all(left.map((doc) => this.flush(doc)));
      }
    } catch (err) {
      this.options.logger.warn({ documents: pending.length, err: err instanceof Error ? err.message : String(err) }, "outbox batch flush deferred to sweep");
    }
  }

  /**
   * Carries out entries that are kept elsewhere than in their documents'
   * outbox (an import job, whose checkpoint says which rows are done, keeps
   * its batch's entries that way, and re-derives them, with the same ids, to
   * carry them out again after a crash): every effect, then every event in
   * one publish per topic. Rejects when the bus or store failed; the caller
   * keeps them pending. No clear: they are in no outbox.
   */
  async carryOut(items: ReadonlyArray<{ doc: D; entry: E }>): Promise<void> {
    if (items.length === 0) return;
    if (this.options.effects) await this.options.effects(items);
    else if (this.options.effect) for (const { doc, entry } of items) await this.options.effect(doc, entry, this.scope(doc));
    const encoded: EncodedEvent[] = [];
    for (const { doc, entry } of items) for (const event of this.options.events(doc, entry)) encoded.push(withTraceparent(event, entry.trace));
    await publishEvents(this.options.bus, encoded, this.options.topicOrder);
  }

  /** Carries out the outbox of `doc`, as returned by the write that filled it. Rejects when the bus or store failed (the sweep retries). */
  flush(doc: D): Promise<void> {
    const key = `${doc.tenant}|${doc._id}`;
    const previous = this.inFlight.get(key);
    const job = previous
      ? previous
          .catch(() => undefined)
          .then(() => this.scope(doc).findOne({ _id: doc._id } as TenantFilter<D>))
          .then((fresh) => (fresh ? this.flushLoop(fresh) : undefined))
      : this.flushLoop(doc);
    const tracked = job.finally(() => {
      if (this.inFlight.get(key) === tracked) this.inFlight.delete(key);
    });
    this.inFlight.set(key, tracked);
    return tracked;
  }

  private scope(doc: D): TenantCollection<D> {
    return this.options.documents.forTenant(doc.tenant);
  }

  private async flushLoop(first: D): Promise<void> {
    const documents = this.scope(first);
    const done = new Set<string>();
    let doc: D | null = first;
    for (let pass = 0; doc?.outbox_pending === true; pass++) {
      if (pass === MAX_PASSES) {
        this.options.logger.warn({ document_id: first._id }, "outbox keeps changing; left to the sweep");
        return;
      }
      // After a concurrent change only its new entries are carried out; the others are done.
      const current: D = doc;
      const fresh = current.outbox.filter((entry) => !done.has(entry.id));
      const encoded: EncodedEvent[] = [];
      for (const entry of fresh) {
        if (this.options.effect) await this.options.effect(current, entry, documents);
        for (const event of this.options.events(current, entry)) encoded.push(withTraceparent(event, entry.trace));
      }
      await publishEvents(this.options.bus, encoded, this.options.topicOrder);
      for (const entry of fresh) done.add(entry.id);
      const completed = await (this.options.complete ?? clearOutbox)(current, documents);
      if (completed) return;
      doc = await documents.findOne({ _id: first._id } as TenantFilter<D>);
    }
  }

  /** One pass over pending outboxes of every tenant; resolves how many documents it took up. */
  async sweep(): Promise<number> {
    const olderThan = this.options.clock() - (this.options.sweepGraceMs ?? 5000);
    const pending = await this.options.documents.find(
      { outbox_pending: true, updated_at: { $lt: olderThan } } as Parameters<CrossTenantCollection<D>["find"]>[0],
      { limit: this.options.sweepBatch ?? 100 },
    );
    let failed = 0;
    let lastError = "";
    for (const doc of pending) {
      try {
        await this.flush(doc);
      } catch (err) {
        failed++;
        lastError = err instanceof Error ? err.message : String(err);
      }
    }
    if (failed > 0) this.options.logger.warn({ failed, err: lastError }, "outbox sweep left documents pending");
    return pending.length;
  }

  /** The backlog: documents of every tenant whose outbox is not carried out yet (for a metric). */
  pending(): Promise<number> {
    return this.options.documents.count({ outbox_pending: true } as Parameters<CrossTenantCollection<D>["count"]>[0]);
  }

  /** Starts the periodic sweep (and the passes after it); the first runs at once, for what a crash left. */
  start(): void {
    if (this.timer || this.sweeping) return;
    this.stopped = false;
    // The backlog, counted when Prometheus scrapes (an indexed count of pending documents).
    this.stopObserving ??= BACKLOG().observe(async (gauge) => gauge.set({ service: this.options.name }, await this.pending()));
    const interval = this.options.sweepIntervalMs ?? 2000;
    const tick = () => {
      this.timer = undefined;
      this.sweeping = this.runPasses().finally(() => {
        this.sweeping = undefined;
        if (!this.stopped) this.timer = setTimeout(tick, interval);
      });
    };
    this.timer = setTimeout(tick, 0);
  }

  private async runPasses(): Promise<void> {
    const passes: RelayPass[] = [{ name: "outbox sweep", run: () => this.sweep() }, ...(this.options.passes ?? [])];
    for (const pass of passes) {
      if (this.stopped) return;
      try {
        await pass.run();
      } catch (err) {
        this.options.logger.warn({ pass: pass.name, err: err instanceof Error ? err.message : String(err) }, "periodic pass failed");
      }
    }
  }

  /** Stops the sweep and waits for it and every flush under way. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.stopObserving?.();
    this.stopObserving = undefined;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.sweeping;
    await Promise.allSettled([...this.inFlight.values()]);
  }
}
