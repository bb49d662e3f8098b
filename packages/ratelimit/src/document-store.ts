import { counter, type Logger } from "@emailsvc/telemetry";
import { DuplicateKeyError, type Collection, type Doc, type DocumentStore } from "@emailsvc/storage";
import { decide, emissionMs, spanMs, stateAt, TAT_EPSILON, type Bucket, type BucketState } from "./gcra.js";
import { MemoryCounterStore, outcomeOf } from "./memory-store.js";
import type { CounterStore, Outcome } from "./store.js";

// Counters shared by every gateway replica, in the gateway's own database
// (RATE_LIMIT_STORE=mongo): one document per bucket, `{_id: <bucket key>,
// tat: <ms>}`, changed only by single-document guarded updates, which the
// storage port has on every adapter and which MongoDB applies atomically. The
// GCRA step "tat = max(tat, now) + emission, if tat <= now + tolerance" is
// split by the state of the document, each case one guarded write:
//
//   bucket partly used   {_id, tat: {$gt: now, $lte: now + tolerance}}  $inc tat by emission
//   bucket full          {_id, tat: {$lte: now}}                       $set tat = now + emission
//   no document          insertOne {_id, tat: now + emission}          (DuplicateKeyError: it exists)
//
// A write that matches nothing means the document is not in the case this
// replica expected: it tries the other case's write, and if that matches
// nothing either, reads the document (findOne) and either refuses (tat beyond
// now + tolerance) or tries the write the document now calls for.
// No write ever admits a request the budget has no room for, whatever other
// replicas do meanwhile, so there is no over-admission (on MongoDB; FerretDB
// v1 isolates updates only within one process, see ARCHITECTURE "Storage").
//
// Cost per request: one write per bucket, the buckets of a request (API key
// and tenant) in parallel, whenever this replica guessed the document's case
// right: the $inc needs no exact TAT, only "partly used", so replicas taking
// turns on one bucket still pay one write each. A wrong guess (the bucket
// became full or partly used since this replica last saw it) costs a second
// write; a read is added only when the bucket went over budget or was swept
// meanwhile. A request this replica already knows is over budget costs
// nothing, because TATs only grow: its last view refusing means the shared one
// refuses too, so a flood of refused requests does not reach the database. A
// request refused by one bucket after another charged it gives that charge
// back ($inc by -emission).
//
// When the store fails or is slower than RATE_LIMIT_STORE_TIMEOUT_MS, the
// request is decided by this replica's own counters (the same Map that holds
// its last views), and the store is left alone for a second before it is
// tried again: limits then hold per replica (N replicas admit up to N times a
// budget), neither failing open (no limit at all while the database is down
// is what an attacker would wait for) nor closed (the API down because its
// limiter's database is). See the gateway README, "Rate limits".

interface CounterDoc extends Doc {
  _id: string;
  /** The bucket's GCRA theoretical arrival time, ms since the epoch. */
  tat: number;
}

export interface DocumentCounterStoreOptions {
  /** Default `rate_limits`. */
  collection?: string;
  /** RATE_LIMIT_STORE_TIMEOUT_MS: longest wait for the store per request before counting locally; default 250. */
  timeoutMs?: number;
  /** After a failure, how long requests are counted locally before the store is tried again; default 1 000. */
  backoffMs?: number;
  /** How often documents of full buckets are deleted; default 60 000; 0: never (tests sweep by hand). */
  sweepIntervalMs?: number;
  /** Most buckets this replica remembers (its views, and its counters during an outage). */
  maxKeys?: number;
  logger?: Logger;
  /** The sweep's clock; default Date.now. Requests bring their own `now`. */
  clock?: () => number;
}

const fallbacks = counter(
  "gateway_rate_limit_store_fallbacks_total",
  "Requests counted by this replica alone because the shared rate-limit store failed, was slow or is backed off.",
  [],
);

/** A document older than this past its TAT (a full bucket) is deleted by the sweep. */
const SWEEP_GRACE_MS = 60_000;
/** Write-read rounds before a request gives up on a bucket that other replicas keep moving. */
const MAX_ROUNDS = 4;

class StoreTimeout extends Error {
  constructor(ms: number) {
    super(`no answer within ${ms} ms`);
    this.name = "StoreTimeout";
  }
}

type Write = "set" | "inc" | "insert";

class Contention extends Error {
  constructor() {
    super(`a bucket changed under ${MAX_ROUNDS} attempts in a row`);
    this.name = "Contention";
  }
}

export interface DocumentCounterStats {
  /** Store operations issued (inserts, updates, reads, refunds). */
  operations: number;
  /** Requests decided by this replica's counters because the store failed, was slow or out of reach. */
  fallbacks: number;
  /** Requests refused from this replica's view without asking the store. */
  localRefusals: number;
}

export class DocumentCounterStore implements CounterStore {
  /** This replica's last view of each bucket, and its counters while the store is unavailable. */
  readonly local: MemoryCounterStore;
  readonly stats: DocumentCounterStats = { operations: 0, fallbacks: 0, localRefusals: 0 };
  private readonly timeoutMs: number;
  private readonly backoffMs: number;
  private readonly logger: Logger | undefined;
  private readonly clock: () => number;
  private readonly sweeper: NodeJS.Timeout | undefined;
  /** Until when requests are counted locally (after a failure); undefined: the store is in use. */
  private unavailableUntil: number | undefined;

  private constructor(
    private readonly collection: Collection<CounterDoc>,
    options: DocumentCounterStoreOptions,
  ) {
    this.local = new MemoryCounterStore({ maxKeys: options.maxKeys });
    this.timeoutMs = options.timeoutMs ?? 250;
    this.backoffMs = options.backoffMs ?? 1000;
    this.logger = options.logger;
    this.clock = options.clock ?? Date.now;
    const interval = options.sweepIntervalMs ?? 60_000;
    if (interval > 0) {
      this.sweeper = setInterval(() => void this.sweep().catch(() => undefined), interval);
      this.sweeper.unref();
    }
  }

  /** Opens the collection and its index (for the sweep). */
  static async open(store: DocumentStore, options: DocumentCounterStoreOptions = {}): Promise<DocumentCounterStore> {
    const collection = store.collection<CounterDoc>(options.collection ?? "rate_limits");
    // The sweep's query: documents whose bucket has been full for a while.
    await collection.createIndexes([{ name: "tat", fields: { tat: 1 } }]);
    return new DocumentCounterStore(collection, options);
  }

  /** Whether requests are counted locally now, because the store failed. */
  get degraded(): boolean {
    return this.unavailableUntil !== undefined;
  }

  async consume(buckets: readonly Bucket[], now: number): Promise<Outcome> {
    const view = this.local.evaluate(buckets, now);
    if (!view.allowed) {
      this.stats.localRefusals += 1;
      return view;
    }
    if (this.unavailableUntil !== undefined && now < this.unavailableUntil) return this.fallback(buckets, now);
    let timer: NodeJS.Timeout | undefined;
    try {
      const outcome = await Promise.race([
        this.consumeShared(buckets, now),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new StoreTimeout(this.timeoutMs)), this.timeoutMs);
        }),
      ]);
      if (this.unavailableUntil !== undefined) {
        this.unavailableUntil = undefined;
        this.logger?.info("rate-limit store reachable again: counting across replicas");
      }
      return outcome;
    } catch (error) {
      if (this.unavailableUntil === undefined) {
        this.logger?.warn(
          { err: { name: (error as Error).name, message: (error as Error).message } },
          "rate-limit store unavailable: counting per replica until it answers",
        );
      }
      this.unavailableUntil = now + this.backoffMs;
      return this.fallback(buckets, now);
    } finally {
      clearTimeout(timer);
    }
  }

  peek(bucket: Bucket, now: number): BucketState {
    return this.local.peek(bucket, now);
  }

  /**
   * Gives a charge back: this replica's view at once, and the shared document
   * unless requests are counted locally now (the charge was counted there).
   * Only a bucket still partly used moves (one full again has nothing to give
   * back). A failure is logged, never thrown: the refused refund costs the
   * tenant one request of its budget, and the request it was for goes on.
   */
  async refund(bucket: Bucket, now: number): Promise<void> {
    this.local.refundNow(bucket, now);
    if (this.unavailableUntil !== undefined && now < this.unavailableUntil) return;
    const emission = emissionMs(bucket.policy) * (bucket.cost ?? 1);
    try {
      this.stats.operations += 1;
      const doc = await this.collection.updateOne({ _id: bucket.key, tat: { $gt: now } }, { $inc: { tat: -emission } });
      if (doc) this.local.record(bucket.key, doc.tat, now);
    } catch (error) {
      this.logger?.warn({ err: { name: (error as Error).name, message: (error as Error).message } }, "rate-limit refund failed");
    }
  }

  /** Deletes the documents of buckets that have been full for a minute (they mean nothing any more). */
  async sweep(now: number = this.clock()): Promise<number> {
    try {
      this.stats.operations += 1;
      return await this.collection.deleteMany({ tat: { $lt: now - SWEEP_GRACE_MS } });
    } catch (error) {
      this.logger?.warn({ err: { name: (error as Error).name, message: (error as Error).message } }, "rate-limit sweep failed");
      throw error;
    }
  }

  async close(): Promise<void> {
    if (this.sweeper) clearInterval(this.sweeper);
  }

  private fallback(buckets: readonly Bucket[], now: number): Outcome {
    this.stats.fallbacks += 1;
    fallbacks.inc();
    return this.local.consumeNow(buckets, now);
  }

  private async consumeShared(buckets: readonly Bucket[], now: number): Promise<Outcome> {
    const taken = await Promise.all(buckets.map((bucket) => this.take(bucket, now)));
    const refused = taken.some((t) => !t.allowed);
    if (refused) {
      // All or nothing: give back what the other buckets took.
      await Promise.all(
        buckets.map(async (bucket, i) => {
          if (!taken[i]!.allowed) return;
          const emission = emissionMs(bucket.policy) * (bucket.cost ?? 1);
          this.stats.operations += 1;
          const doc = await this.collection.updateOne({ _id: bucket.key }, { $inc: { tat: -emission } });
          taken[i] = { allowed: true, tat: doc?.tat ?? taken[i]!.tat - emission };
        }),
      );
    }
    buckets.forEach((bucket, i) => this.local.record(bucket.key, taken[i]!.tat, now));
    // Refused: decide() on the stored TATs gives each bucket's state and the wait.
    return outcomeOf(
      buckets.map((bucket, i) => {
        const { allowed, tat } = taken[i]!;
        if (refused && !allowed) return decide(bucket.policy, tat, now, bucket.cost);
        const state = stateAt(bucket.policy, tat, now);
        return { allowed: true, tat, retryAfterMs: 0, ...state, before: state };
      }),
    );
  }

  /** One request from one bucket: admitted (its new TAT) or refused (its TAT as stored). */
  private async take(bucket: Bucket, now: number): Promise<{ allowed: boolean; tat: number }> {
    const { key, policy } = bucket;
    const cost = bucket.cost ?? 1;
    // What the charge adds, and the latest TAT that still has room for it.
    const emission = emissionMs(policy) * cost;
    const limitAt = now + spanMs(policy) - emission + TAT_EPSILON;
    const writes: Record<Write, () => Promise<number | undefined>> = {
      // Full (TAT in the past): starts afresh.
      set: async () => (await this.collection.updateOne({ _id: key, tat: { $lte: now } }, { $set: { tat: now + emission } }))?.tat,
      // Partly used, with room: one more.
      inc: async () =>
        (await this.collection.updateOne({ _id: key, tat: { $gt: now, $lte: limitAt } }, { $inc: { tat: emission } }))?.tat,
      // None yet.
      insert: async () => {
        try {
          await this.collection.insertOne({ _id: key, tat: now + emission });
          return now + emission;
        } catch (error) {
          if (error instanceof DuplicateKeyError) return undefined;
          throw error;
        }
      },
    };
    // What this replica believes the document holds (a TAT, "absent", or
    // undefined when it does not know: never seen, or forgotten once full,
    // which usually means a full document or none). The writes are tried in
    // the order that belief suggests; only when none matches is the document
    // read (it is over budget, or it changed case again meanwhile).
    let guess: number | "absent" | undefined = this.local.tatOf(key);
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const order: Write[] =
        guess === undefined ? ["set", "insert"] : guess === "absent" ? ["insert"] : guess <= now ? ["set", "inc"] : ["inc", "set"];
      for (const write of order) {
        this.stats.operations += 1;
        const tat = await writes[write]();
        if (tat !== undefined) return { allowed: true, tat };
      }
      this.stats.operations += 1;
      const doc = await this.collection.findOne({ _id: key });
      if (doc && doc.tat > limitAt) return { allowed: false, tat: doc.tat };
      guess = doc ? doc.tat : "absent";
    }
    throw new Contention();
  }
}
