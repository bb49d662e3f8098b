import { randomBytes } from "node:crypto";
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

/**
 * An attempt's hold on its email: renewed every third of the lease while the
 * attempt runs, so the lease can be short (a crashed attempt's email is free
 * again within seconds) and a send may still take longer than one lease. Its
 * signal aborts the send on shutdown, at the attempt's deadline, or when the
 * lease is lost (another attempt may own the email) or could not be renewed
 * before it ran out.
 */
export class Lease {
  readonly signal: AbortSignal;
  lost = false;
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  /** Cuts the attempt off at its deadline. */
  private readonly deadline: NodeJS.Timeout;
  private stopped = false;
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
    // a tenth of a campaign email's whole cost (bench/README.md).
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
    this.stop();
    clearTimeout(this.deadline);
    this.shutdown.removeEventListener("abort", this.onShutdown);
  }
}
