import { counter, type Logger } from "@emailsvc/runtime";
import { DuplicateKeyError, type Collection, type Doc, type DocumentStore } from "@emailsvc/storage";
import {
  emissionIntervalUs,
  forcedTatCeiling,
  gcraAdmitted,
  gcraConsume,
  gcraPeek,
  latestAdmissibleTat,
  type ConsumeOptions,
  type GcraResult,
  toMicros,
  type Rate,
} from "./gcra.js";
import { MemoryCounterStore } from "./memory-store.js";
import type { CounterStore } from "./store.js";

// Counters shared by every gateway replica, in the gateway's own database
// (MongoDB in production). One document per counter: { _id: <counter id>, tat }.
//
// The document-store port has single-document atomicity, guarded updates and
// unique _id, but no upsert, no $max and no TTL index. A consume is one
// guarded write, chosen from what this replica last saw of the counter (its
// mirror); the guard makes the write apply only in the state it assumes, and
// the server applies concurrent writes to one document one after another,
// re-checking the guard for each, so N replicas never take more than the
// budget:
//  - busy (TAT ahead of now): `updateOne({_id, tat: {$gte: now, $lte:
//    <latest admissible>}}, {$inc: {tat: I}})`;
//  - idle (TAT passed, i.e. a full budget whatever its value):
//    `updateOne({_id, tat: {$lt: now}}, {$set: {tat: now + I}})`;
//  - new: `insertOne` (a duplicate _id: another replica created it first).
// So an admitted request costs ONE round trip per budget, busy or idle; a new
// counter two. A write that matches nothing means the guess was wrong: the
// next one is tried, and a read settles it when in doubt (a refusal found by
// the store costs two to four round trips, once per replica: see below).
//
// Refused counters are remembered in this replica's mirror, and later
// requests on them are refused from it with NO round trip until the mirror
// says the budget is back (a flood from one key costs the store nothing).
// The mirror only lags behind refunds, so it can refuse a request a refund
// would have let through, never admit one too many.
//
// Expiry: a counter whose TAT has passed means a full budget, the same as no
// document, so `sweep` deletes `{tat: {$lt: now}}` every minute (any replica;
// deleting twice is harmless). There is no index on `tat`: an index would be
// rewritten by every increment, while the sweep's scan touches only the
// counters of the last few windows once a minute.
//
// Slow or unreachable store: FAIL OPEN TO THE LOCAL BUDGET. A decision that
// takes longer than `timeoutMs` (default 100 ms), or fails, is taken by this
// replica's mirror instead, which continues from the counters it last saw
// (a key that was refused stays refused), and the store is not asked again for
// `retryAfterFailureMs` (5 s). So an outage of the counter store neither takes
// the API down (fail closed would answer 429 or 503 to everyone) nor lifts the
// limits (fail open would let an attacker who can slow the store through
// unlimited): each replica enforces the budgets alone, so N replicas admit up
// to N times a budget until the store answers again. A decision that completes
// after its timeout still updates the shared counter and the mirror.

interface CounterDoc extends Doc {
  /** GCRA theoretical arrival time, whole µs since the epoch (gcra.ts). */
  tat: number;
}

export interface SharedCounterStoreOptions {
  /** Longest wait for the store per decision before this replica decides alone; default 100 ms. */
  timeoutMs?: number;
  /** After a failure or timeout, decide locally for this long before asking the store again; default 5 s. */
  retryAfterFailureMs?: number;
  /** Most counters the local mirror keeps (see MemoryCounterStore); default 250,000. */
  maxKeys?: number;
  /** How often expired counters are deleted; default 60 s; 0: never by itself (call `sweep`). */
  sweepIntervalMs?: number;
  /** Told when the store stops or starts answering (never a counter id). */
  logger?: Logger;
  /** Default `rate_limit_counters`. */
  collection?: string;
  /** The clock of the periodic sweep, in ms; default Date.now. */
  now?: () => number;
}

/** Rounds of read and guarded write before a decision gives up on a counter fought over this hard. */
const MAX_ATTEMPTS = 8;

class TimeoutError extends Error {}
class ContentionError extends Error {}

/** Why a decision was taken locally: this one timed out or failed, the store failed recently, or the counter was fought over. */
export type SharedStoreFallbackReason = "timeout" | "error" | "store_down" | "contention";

export class SharedCounterStore implements CounterStore {
  /** This replica's view of the counters: hints while the store answers, the counters while it does not. */
  readonly local: MemoryCounterStore;
  private readonly counters: Collection<CounterDoc>;
  private readonly timeoutMs: number;
  private readonly retryAfterFailureMs: number;
  private readonly logger: Logger | undefined;
  private readonly sweepTimer: NodeJS.Timeout | undefined;
  /** Operations sent to the store so far (each one round trip on MongoDB): what the benchmark and tests count. */
  roundTrips = 0;
  private downUntil = Number.NEGATIVE_INFINITY;
  private down = false;
  private readonly fallbacks = counter(
    "gateway_rate_limit_local_decisions_total",
    "Rate-limit decisions this replica took alone because the shared counter store was slow, failing or contended.",
    ["reason"],
  );

  constructor(store: DocumentStore, options: SharedCounterStoreOptions = {}) {
    this.counters = store.collection<CounterDoc>(options.collection ?? "rate_limit_counters");
    this.local = new MemoryCounterStore({ maxKeys: options.maxKeys });
    this.timeoutMs = options.timeoutMs ?? 100;
    this.retryAfterFailureMs = options.retryAfterFailureMs ?? 5000;
    this.logger = options.logger;
    const interval = options.sweepIntervalMs ?? 60_000;
    const now = options.now ?? Date.now;
    if (interval > 0) {
      this.sweepTimer = setInterval(() => {
        this.sweep(toMicros(now())).catch((err: unknown) => {
          this.logger?.warn({ err: { name: (err as Error).name, message: (err as Error).message } }, "rate-limit sweep failed");
        });
      }, interval);
      this.sweepTimer.unref();
    }
  }

  /** Whether decisions are taken locally right now (the store failed or was slow recently). */
  get degraded(): boolean {
    return this.down;
  }

  async consume(id: string, rate: Rate, nowUs: number, options?: ConsumeOptions): Promise<GcraResult> {
    if (nowUs < this.downUntil) return this.decideLocally(id, rate, nowUs, options, "store_down");
    try {
      const result = await withTimeout(this.consumeShared(id, rate, nowUs, options), this.timeoutMs);
      this.markUp();
      return result;
    } catch (err) {
      if (err instanceof ContentionError) return this.decideLocally(id, rate, nowUs, options, "contention");
      this.markDown(nowUs, err);
      return this.decideLocally(id, rate, nowUs, options, err instanceof TimeoutError ? "timeout" : "error");
    }
  }

  /** From the mirror: no round trip (see the class comment). */
  async peek(id: string, rate: Rate, nowUs: number): Promise<GcraResult> {
    return this.local.peek(id, rate, nowUs);
  }

  async refund(id: string, rate: Rate, nowUs: number, cost = 1): Promise<void> {
    await this.local.refund(id, rate, nowUs, cost);
    if (nowUs < this.downUntil) return;
    try {
      await withTimeout(this.call((c) => c.updateOne({ _id: id }, { $inc: { tat: -cost * emissionIntervalUs(rate) } })), this.timeoutMs);
    } catch (err) {
      // A lost refund only makes this budget stricter by one unit for one window.
      this.markDown(nowUs, err);
    }
  }

  /** Deletes counters whose TAT has passed (a full budget) at `nowUs`; returns how many. */
  async sweep(nowUs: number): Promise<number> {
    this.local.sweep(nowUs);
    return this.call((c) => c.deleteMany({ tat: { $lt: nowUs } }));
  }

  async close(): Promise<void> {
    if (this.sweepTimer) clearInterval(this.sweepTimer);
  }

  private async consumeShared(id: string, rate: Rate, nowUs: number, options: ConsumeOptions = {}): Promise<GcraResult> {
    const cost = options.cost ?? 1;
    const force = options.force === true;
    const interval = emissionIntervalUs(rate);
    const hint = this.local.get(id);
    if (!force && hint !== undefined) {
      const seen = gcraPeek(hint, nowUs, rate, cost);
      if (!seen.allowed) return seen;
    }
    // Which write to try first, from what this replica last saw. Each write
    // is guarded so that it applies only in the state it assumes; a write
    // that matches nothing says the guess was wrong, and the next one is
    // tried (a read settles it when in doubt).
    //   idle:   a TAT in the past is a full budget, whatever its value
    //   absent: no document yet
    //   busy:   a TAT ahead of now but within the budget
    //   read:   find out
    let guess: "idle" | "absent" | "busy" | "read" = hint !== undefined && hint >= nowUs ? "busy" : "idle";
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt += 1) {
      if (guess === "idle") {
        const doc = await this.call((c) => c.updateOne({ _id: id, tat: { $lt: nowUs } }, { $set: { tat: nowUs + cost * interval } }));
        if (doc !== null) return this.admitted(id, doc.tat, nowUs, rate);
        // Never seen here: most likely a new counter. Seen idle: it may have
        // been swept or taken by another replica since.
        guess = hint === undefined && attempt === 0 ? "absent" : "read";
      } else if (guess === "absent") {
        try {
          await this.call((c) => c.insertOne({ _id: id, tat: nowUs + cost * interval }));
          return this.admitted(id, nowUs + cost * interval, nowUs, rate);
        } catch (err) {
          if (!(err instanceof DuplicateKeyError)) throw err;
          guess = "busy"; // another replica created it just now
        }
      } else if (guess === "busy") {
        // A forced charge may take the TAT up to two windows ahead (gcra.ts).
        const ceiling = force ? forcedTatCeiling(nowUs, rate) - cost * interval : latestAdmissibleTat(nowUs, rate, cost);
        const doc = await this.call((c) => c.updateOne({ _id: id, tat: { $gte: nowUs, $lte: ceiling } }, { $inc: { tat: cost * interval } }));
        if (doc !== null) return this.admitted(id, doc.tat, nowUs, rate);
        guess = "read";
      } else {
        const doc = await this.call((c) => c.findOne({ _id: id }));
        if (doc === null) {
          guess = "absent";
        } else if (doc.tat < nowUs) {
          guess = "idle";
        } else {
          const step = gcraConsume(doc.tat, nowUs, rate, options);
          // Refused (or, forced, already as far ahead as a charge may go):
          // nothing to write, and this replica now knows.
          if (!step.allowed || step.tat <= doc.tat) {
            this.local.remember(id, doc.tat, nowUs);
            return step;
          }
          guess = "busy";
        }
      }
    }
    throw new ContentionError(`counter still contended after ${MAX_ATTEMPTS} attempts`);
  }

  /** One operation on the counters collection: one round trip on MongoDB. */
  private call<T>(operation: (counters: Collection<CounterDoc>) => Promise<T>): Promise<T> {
    this.roundTrips += 1;
    return operation(this.counters);
  }

  private admitted(id: string, tat: number, nowUs: number, rate: Rate): GcraResult {
    this.local.remember(id, tat, nowUs);
    return gcraAdmitted(tat, nowUs, rate);
  }

  private decideLocally(
    id: string,
    rate: Rate,
    nowUs: number,
    options: ConsumeOptions | undefined,
    reason: SharedStoreFallbackReason,
  ): GcraResult {
    this.fallbacks.inc({ reason });
    return this.local.consumeSync(id, rate, nowUs, options);
  }

  private markDown(nowUs: number, err: unknown): void {
    this.downUntil = nowUs + this.retryAfterFailureMs * 1000;
    if (this.down) return;
    this.down = true;
    const reason = err instanceof TimeoutError ? `no answer within ${this.timeoutMs} ms` : describe(err);
    this.logger?.warn(
      { reason, retry_after_ms: this.retryAfterFailureMs },
      "rate-limit store not answering: this replica enforces the budgets alone",
    );
  }

  private markUp(): void {
    if (!this.down) return;
    this.down = false;
    this.logger?.info("rate-limit store answering again: budgets shared across replicas");
  }
}

/** The result, or TimeoutError after `ms`; the work itself goes on (and its failure is swallowed). */
function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new TimeoutError(`no answer within ${ms} ms`)), ms);
  });
  work.catch(() => undefined);
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

function describe(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}
