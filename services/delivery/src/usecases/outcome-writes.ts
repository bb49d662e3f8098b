import type { TenantCollection, TenantFilter, TenantUpdate } from "@emailsvc/storage";
import type { EmailDoc } from "../storage/documents.js";

// The outcome writes of a campaign batch's emails, made together. Each sent
// email's `sent` was a store write of its own (the embedded store: a check of
// the store, an append wait and a promise per email; MongoDB: a round trip
// each). Here a settle only queues its guarded update; the updates queued by
// the time the event loop next checks for immediates (replies read from every
// SMTP connection in that turn: one poll phase) go to the store in one
// updateEach, and each settle resolves once its own update is durable, as
// before.
//
// What a crash loses is unchanged in kind: an email whose outcome write was
// not yet durable is sent again once its lease runs out (the duplicate window
// of deliver-email.ts, from the relay's reply to the write). The wait added to
// that window is at most one turn of the event loop (the store's group append
// then waits for the next one, as it did for each write before:
// packages/storage/src/group-append.ts).

interface Queued {
  filter: TenantFilter<EmailDoc>;
  update: TenantUpdate<EmailDoc>;
  resolve: (matched: boolean) => void;
  reject: (error: unknown) => void;
}

/** Outcome writes of one tenant's emails, grouped per turn of the event loop. */
export class OutcomeWrites {
  private queued: Queued[] = [];
  /** Writes made (one per updateEach), and the updates they carried: tests and benchmarks read them. */
  writes = 0;
  updates = 0;

  constructor(private readonly emails: TenantCollection<EmailDoc>) {}

  /**
   * Applies one guarded update (its filter names one email) with the others
   * of this turn; resolves to whether it matched, once it is in the store.
   * A failure of the write rejects every update it carried.
   */
  write(filter: TenantFilter<EmailDoc>, update: TenantUpdate<EmailDoc>): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) => {
      if (this.queued.length === 0) setImmediate(() => this.flush());
      this.queued.push({ filter, update, resolve, reject });
    });
  }

  private flush(): void {
    const batch = this.queued;
    this.queued = [];
    this.writes += 1;
    this.updates += batch.length;
    this.emails.updateEach(batch.map(({ filter, update }) => ({ filter, update }))).then(
      (matched) => {
        for (let i = 0; i < batch.length; i += 1) batch[i]!.resolve(matched[i]! > 0);
      },
      (error: unknown) => {
        for (const queued of batch) queued.reject(error);
      },
    );
  }
}
