import { Periodic, type Outbox } from "@emailsvc/outbox";
import { newId, type Logger } from "@emailsvc/runtime";
import type { AcrossTenants } from "@emailsvc/storage";
import type { EmailDoc } from "../storage/documents.js";
import { emailWrites } from "../usecases/deps.js";

export interface StalledSweepOptions {
  /** Every tenant's emails: the sweep looks for stalled mail wherever it is. */
  emails: AcrossTenants<EmailDoc>;
  outbox: Pick<Outbox<EmailDoc>, "afterWrite">;
  logger: Logger;
  clock: () => number;
  /** A queued email untouched this long, not leased and with nothing pending, is requested again. */
  stalledAfterMs: number;
  intervalMs: number;
}

/**
 * A safety net, not the way queued mail resumes: both buses keep their events
 * across restarts (Kafka, and the in-process bus in its files under DATA_DIR),
 * and an attempt that died leaves a lease that runs out within seconds, after
 * which the redelivered event sends the email. This sweep gives a fresh send
 * request to a queued email nothing has happened to for `stalledAfterMs`
 * (default 10 min): no lease held, nothing pending. It is for the event that
 * was lost anyway (deleted by hand, a bus directory or topic lost). The
 * request is written to the outbox first (guarded by version), then published.
 */
export class StalledSweep {
  private readonly periodic: Periodic;

  constructor(private readonly options: StalledSweepOptions) {
    this.periodic = new Periodic(() => this.run(), options.intervalMs, (err) =>
      options.logger.warn({ error: err instanceof Error ? err.name : "error" }, "stalled-mail sweep failed"),
    );
  }

  /** One pass; returns how many emails it requested again. */
  async run(): Promise<number> {
    const now = this.options.clock();
    const stalled = await this.options.emails.find(
      { status: "queued", updated_at: { $lt: now - this.options.stalledAfterMs } },
      { limit: 100 },
    );
    let requeued = 0;
    for (const doc of stalled) {
      if (doc.outbox_pending || doc.lease_until > now) continue;
      const updated = await this.options.emails.updateOne(
        { _id: doc._id, tenant: doc.tenant, version: doc.version, status: "queued", outbox_pending: false },
        emailWrites.appended({}, [{ id: newId("evt"), topic: "email.send.requested", at: now }], now),
      );
      if (!updated) continue;
      requeued += 1;
      this.options.logger.warn({ email_id: doc._id }, "stalled email: send requested again");
      await this.options.outbox.afterWrite(updated);
    }
    return requeued;
  }

  start(): void {
    this.periodic.start();
  }

  stop(): Promise<void> {
    return this.periodic.stop();
  }
}
