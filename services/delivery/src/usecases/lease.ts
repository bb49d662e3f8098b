import { randomBytes } from "node:crypto";
import { getEventListeners } from "node:events";
import type { TenantCollection } from "@emailsvc/storage";
import { isFinal, PENDING } from "../domain/email.js";
import type { EmailDoc } from "../storage/documents.js";
import type { DeliveryDeps } from "./deliver-email.js";

// An attempt's claim on its email: taken with a guarded write, renewed while
// the attempt runs, so that two deliveries of one send request never send the
// email at once and a crashed attempt's email is free again within a lease.

/** What claiming found: the email claimed with the attempt's token, or why not. */
export type Claim = { claimed: EmailDoc; token: string } | { done: true } | { busy: true };

/**
 * Claims a queued email for one attempt: `status: queued` and the lease free
 * → `lease_until = now + leaseMs`, `attempts + 1`. A deferred email is
 * claimed only once the retry sweep asked for it (`retry_requested`, cleared
 * by its next deferral): an older send request redelivered meanwhile does
 * not try it before its time.
 * `done` when the email is unknown (erased), settled (a repeated event) or
 * deferred and not due; `busy` when another attempt holds the lease (or held
 * it and died: try again once it ran out).
 */
export async function claimEmail(deps: Pick<DeliveryDeps, "leaseMs" | "now">, emails: TenantCollection<EmailDoc>, emailId: string): Promise<Claim> {
  const doc = await emails.findOne({ _id: emailId });
  if (!doc || notClaimable(doc)) return { done: true };
  const now = deps.now();
  const token = randomBytes(9).toString("base64url");
  const won = await emails.updateOne(
    // The status read: a deferral written since then (by an attempt that held the lease) is not claimed.
    { _id: doc._id, status: doc.status, lease_until: { $lt: now }, ...(doc.status === "deferred" ? { retry_requested: true } : {}) },
    // retry_requested stays: an attempt that crashes leaves the email claimable by the redelivered request
    // once its lease runs out; only the attempt's own deferral clears it.
    { $set: { lease_until: now + deps.leaseMs, lease_token: token, updated_at: now }, $inc: { attempts: 1 } },
  );
  if (won) return { claimed: won, token };
  const current = await emails.findOne({ _id: doc._id });
  return !current || notClaimable(current) ? { done: true } : { busy: true };
}

/** Settled, or deferred and not yet asked for by the retry sweep. */
function notClaimable(doc: EmailDoc): boolean {
  return isFinal(doc.status) || (doc.status === "deferred" && doc.retry_requested !== true);
}

/** What an attempt holds while it sends: its signal, and whether the lease was lost. */
export interface AttemptLease {
  readonly signal: AbortSignal;
  readonly lost: boolean;
  /** Stops renewing (the attempt is about to write its outcome). */
  stop(): void;
  /** The attempt is over. */
  end(): void;
}

/**
 * An attempt's hold on its email: renewed every third of the lease while the
 * attempt runs, so the lease can be short (a crashed attempt's email is free
 * again within seconds) and a send may still take longer than one lease. Its
 * signal aborts the send on shutdown, at the attempt's deadline, or when the
 * lease is lost (another attempt may own the email) or could not be renewed
 * before it ran out.
 */
export class Lease implements AttemptLease {
  readonly signal: AbortSignal;
  lost = false;
  private readonly controller = takeController();
  private timer: NodeJS.Timeout | undefined;
  /** Cuts the attempt off at its deadline. */
  private readonly deadline: NodeJS.Timeout;
  private stopped = false;
  private ended = false;
  private readonly onShutdown = () => this.controller.abort(this.shutdown.reason);

  constructor(
    private readonly deps: Pick<DeliveryDeps, "leaseMs" | "attemptTimeoutMs" | "now" | "logger">,
    private readonly emails: TenantCollection<EmailDoc>,
    private readonly emailId: string,
    private readonly token: string,
    private until: number,
    private readonly shutdown: AbortSignal,
  ) {
    // One controller with a listener and a timer, not AbortSignal.any over
    // AbortSignal.timeout: that pair costs about 30 µs per email in Node 20,
    // a tenth of a campaign email's whole cost (bench/README.md). A lone
    // email has no group to sweep its deadline: a timer of its own.
    this.signal = this.controller.signal;
    this.deadline = setTimeout(() => this.controller.abort(new DOMException("the attempt timed out", "TimeoutError")), deps.attemptTimeoutMs);
    if (shutdown.aborted) this.controller.abort(shutdown.reason);
    else shutdown.addEventListener("abort", this.onShutdown, { once: true });
    this.schedule();
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.renew(), Math.max(1, Math.floor(this.deps.leaseMs / 3)));
  }

  private async renew(): Promise<void> {
    if (this.stopped) return;
    const until = this.deps.now() + this.deps.leaseMs;
    try {
      const renewed = await this.emails.updateOne(
        { _id: this.emailId, lease_token: this.token, status: PENDING },
        { $set: { lease_until: until } },
      );
      if (this.stopped) return;
      if (!renewed) return this.lose("lease lost");
      this.until = until;
    } catch (err) {
      if (this.stopped) return;
      this.deps.logger.warn({ email_id: this.emailId, err: err instanceof Error ? err.message : String(err) }, "lease renewal failed");
      // Past its end another attempt may claim the email: stop sending before then.
      if (this.deps.now() >= this.until - this.deps.leaseMs / 3) return this.lose("lease could not be renewed");
    }
    this.schedule();
  }

  private lose(reason: string): void {
    this.lost = true;
    this.stop();
    this.controller.abort(new Error(reason));
  }

  /** Stops renewing (the attempt is over, or about to write its outcome). */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** The attempt is over: its deadline and its shutdown listener go too. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.stop();
    clearTimeout(this.deadline);
    this.shutdown.removeEventListener("abort", this.onShutdown);
    giveBack(this.controller);
  }
}

/**
 * The leases of a campaign batch's fresh records, which the intake stored
 * claimed with one token (campaign-intake.ts). Each email's attempt gets the
 * hold a Lease gives (its own signal; cut off when its lease is lost, at
 * shutdown, or at its deadline), but the batch shares one renewal (one
 * updateMany, every third of the lease, for every email of the batch not yet
 * done, started or not), one shutdown listener and one sweep of its attempts'
 * deadlines. Per email that saves a listener on the shutdown signal, a
 * renewal timer and a deadline timer; and an email that waits for its turn
 * behind the batch's others keeps its lease meanwhile.
 * It closes itself once every email is done; close() ends it sooner.
 */
export class LeaseGroup {
  /** Emails not yet done (their leases are renewed), and the attempts among them that run. */
  private readonly pending: Set<string>;
  private readonly active = new Map<string, GroupAttempt>();
  /** Emails found no longer ours before their attempt started. */
  private readonly lostBeforeStart = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  /** Cuts off the attempts past their deadline; runs from the first attempt until the group closes. */
  private sweeper: NodeJS.Timeout | undefined;
  private renewing = false;
  private closed = false;
  private readonly onShutdown = () => {
    for (const attempt of this.active.values()) attempt.abort(this.shutdown.reason);
  };

  constructor(
    private readonly deps: Pick<DeliveryDeps, "leaseMs" | "attemptTimeoutMs" | "now" | "logger">,
    private readonly emails: TenantCollection<EmailDoc>,
    private readonly token: string,
    emailIds: readonly string[],
    /** Until when the batch's records are leased (as stored, then as last renewed). */
    private until: number,
    private readonly shutdown: AbortSignal,
  ) {
    this.pending = new Set(emailIds);
    shutdown.addEventListener("abort", this.onShutdown, { once: true });
    this.schedule();
  }

  /** The hold of one email's attempt (an email of this batch, stored with this group's token). */
  attempt(emailId: string): AttemptLease {
    const attempt = new GroupAttempt(this, emailId, performance.now() + this.deps.attemptTimeoutMs);
    if (this.shutdown.aborted) attempt.abort(this.shutdown.reason);
    else if (this.lostBeforeStart.has(emailId) || !this.pending.has(emailId)) attempt.lose("lease lost");
    // Renewals failed for a whole lease: another attempt may have claimed it.
    else if (this.deps.now() >= this.until) attempt.lose("lease could not be renewed");
    else {
      this.active.set(emailId, attempt);
      if (!this.sweeper && !this.closed) this.sweeper = setInterval(() => this.sweep(), deadlineTick(this.deps.attemptTimeoutMs));
    }
    return attempt;
  }

  /** An email is done with its lease (its attempt writes its outcome, or is over). */
  release(emailId: string): void {
    this.active.delete(emailId);
    this.pending.delete(emailId);
    if (this.pending.size === 0) this.close();
  }

  /** No more renewals, no more deadline sweeps, no more listening for the shutdown (idempotent). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = undefined;
    this.shutdown.removeEventListener("abort", this.onShutdown);
  }

  /**
   * Cuts off the attempts past their deadline. A deadline is a bound on an
   * attempt, not a time anyone waits for: a tick of a tenth of it (see
   * deadlineTick) for the whole group replaces a timer set and cleared for
   * every email. An attempt cut off stays active until its send gives up.
   */
  private sweep(): void {
    const now = performance.now();
    for (const attempt of this.active.values()) if (attempt.deadline <= now) attempt.abort(new DOMException("the attempt timed out", "TimeoutError"));
  }

  private schedule(): void {
    if (this.timer || this.renewing || this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.renew();
    }, Math.max(1, Math.floor(this.deps.leaseMs / 3)));
  }

  private async renew(): Promise<void> {
    if (this.closed) return;
    this.renewing = true;
    const ids = [...this.pending];
    const until = this.deps.now() + this.deps.leaseMs;
    try {
      const renewed = await this.emails.updateMany({ _id: { $in: ids }, lease_token: this.token, status: PENDING }, { $set: { lease_until: until } });
      if (renewed < ids.length) {
        // Some were not renewed: settled meanwhile (their attempt wrote its outcome) or taken by another attempt.
        const held = new Set((await this.emails.find({ _id: { $in: ids }, lease_token: this.token, status: PENDING })).map((doc) => doc._id));
        for (const id of ids) if (!held.has(id)) this.lose(id, "lease lost");
      }
      this.until = until;
    } catch (err) {
      this.deps.logger.warn({ emails: ids.length, err: err instanceof Error ? err.message : String(err) }, "lease renewal failed");
      // Past its end another attempt may claim the emails: stop sending before then.
      if (this.deps.now() >= this.until - this.deps.leaseMs / 3) for (const id of ids) this.lose(id, "lease could not be renewed");
    } finally {
      this.renewing = false;
    }
    this.schedule();
  }

  private lose(emailId: string, reason: string): void {
    if (!this.pending.has(emailId)) return; // done meanwhile
    const attempt = this.active.get(emailId);
    if (attempt) attempt.lose(reason);
    else {
      this.lostBeforeStart.add(emailId);
      this.release(emailId);
    }
  }
}

/**
 * How often a LeaseGroup looks for attempts past their deadline: a tenth of
 * the deadline, so an attempt is cut off within 110 % of attemptTimeoutMs
 * (66 s at the default 60 s).
 */
export function deadlineTick(attemptTimeoutMs: number): number {
  return Math.max(1, Math.ceil(attemptTimeoutMs / 10));
}

/** One email's attempt within a LeaseGroup. */
class GroupAttempt implements AttemptLease {
  lost = false;
  private readonly controller = takeController();
  private ended = false;

  constructor(
    private readonly group: LeaseGroup,
    private readonly emailId: string,
    /** When (performance.now()) the group's sweep cuts it off. */
    readonly deadline: number,
  ) {}

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  abort(reason: unknown): void {
    this.controller.abort(reason);
  }

  lose(reason: string): void {
    this.lost = true;
    this.stop();
    this.controller.abort(new Error(reason));
  }

  stop(): void {
    this.group.release(this.emailId);
  }

  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.stop();
    giveBack(this.controller);
  }
}

/**
 * Controllers of attempts that ended without an abort and with no listener
 * left on their signal, for the next attempts of this thread to take rather
 * than make their own: an AbortController with its signal costs about 4 µs in
 * Node 20 (its EventTarget's set-up; 20,000 attempts' took 0.2 s of a
 * profiled delivery thread), more than the rest of an attempt's hold. Such a
 * signal is as new: never aborted, nobody listening (the providers remove
 * their listener when their send settles, and a send outlives its attempt
 * never). An aborted one is never reused.
 */
const spareControllers: AbortController[] = [];
/** Spares kept at most: more than the sends in flight at once (DELIVERY_CONCURRENCY per batch). */
const MAX_SPARE_CONTROLLERS = 256;

function takeController(): AbortController {
  return spareControllers.pop() ?? new AbortController();
}

/** Keeps an attempt's controller for the next attempt when it is as new (see spareControllers); call once, when the attempt is over. */
function giveBack(controller: AbortController): void {
  const signal = controller.signal;
  if (signal.aborted || spareControllers.length >= MAX_SPARE_CONTROLLERS || getEventListeners(signal, "abort").length > 0) return;
  spareControllers.push(controller);
}
