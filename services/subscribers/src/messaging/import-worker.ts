import { randomBytes } from "node:crypto";
import type { Logger } from "@emailsvc/telemetry";
import { tenantOfKey } from "@emailsvc/tenancy";
import type { ImportJobDoc } from "../storage/documents.js";
import type { SubscriberStorage } from "../storage/repositories.js";
import type { Scope } from "../usecases/deps.js";
import type { ImportDeps } from "../usecases/import-deps.js";
import { runImport } from "../usecases/run-import.js";
import { dropUpload, failUpload } from "../usecases/start-import.js";

export interface ImportWorkerOptions {
  storage: SubscriberStorage;
  deps: ImportDeps;
  logger: Logger;
  /** How often it looks for work when idle (default 1 s). */
  pollMs?: number;
  /** How long a claim holds without renewal (default 30 s): a crashed worker's job is free again after it. */
  leaseMs?: number;
  /** An upload untouched this long is failed `upload_abandoned` (default 15 min). */
  staleUploadMs?: number;
  /** How often it drops uploads kept past their job's end by a crash (default 1 min; also at its first look). */
  uploadSweepMs?: number;
  /**
   * No other worker can share the store (the embedded store: its data
   * directory is locked to one process). A running job's lease found at
   * start is then a dead process's, and the job resumes at once instead of
   * after the lease.
   */
  soleWorker?: boolean;
}

/**
 * Runs queued import jobs, one at a time per process, each claimed with a
 * lease (more than one replica may run: a job is one worker's while its lease
 * lasts, renewed after each batch), and resumes a `running` job whose lease
 * ran out (its worker died) from its checkpoint. It also fails uploads left
 * unfinished (the gateway died mid-upload), so none stays `uploading`, and
 * drops the uploads of jobs that ended just before a crash.
 */
export class ImportWorker {
  private readonly owner = `worker_${randomBytes(6).toString("hex")}`;
  private readonly queue;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;
  private staleLeasesFreed = false;
  private nextUploadSweep = 0;

  constructor(private readonly options: ImportWorkerOptions) {
    this.queue = options.storage.importQueue();
  }

  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  /** A job was queued in this process: look now rather than at the next poll (another replica's poll finds it too). */
  wake(): void {
    if (this.stopped || !this.timer) return; // busy: the pass after this one looks at once
    clearTimeout(this.timer);
    this.schedule(0);
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.running = this.pass()
        .catch((err: unknown) => this.options.logger.warn({ err: err instanceof Error ? err.message : String(err) }, "import pass failed"))
        .then((worked) => this.schedule(worked === true ? 0 : (this.options.pollMs ?? 1000)))
        .finally(() => {
          this.running = undefined;
        });
    }, ms);
  }

  /** One look for work: reaps stale uploads, then runs one claimable job; true when it ran one. */
  async pass(): Promise<boolean> {
    if (this.options.soleWorker && !this.staleLeasesFreed) {
      for (const job of await this.queue.find({ state: "running" })) {
        if (job.lease_owner === this.owner) continue;
        await this.queue.forTenant(job.tenant).updateOne({ _id: job._id, state: "running", lease_owner: job.lease_owner }, { $set: { lease_until: 0 } });
      }
      this.staleLeasesFreed = true;
    }
    const now = this.options.deps.now();
    if (now >= this.nextUploadSweep) {
      // A job over whose upload is still held: its worker died between the two writes.
      for (const over of await this.queue.find({ upload_held: true, state: { $in: ["completed", "failed"] } }, { limit: 20 })) {
        await dropUpload(this.options.deps, this.scopeOf(over), over._id);
      }
      this.nextUploadSweep = now + (this.options.uploadSweepMs ?? 60_000);
    }
    for (const stale of await this.queue.find({ state: "uploading", updated_at: { $lt: now - (this.options.staleUploadMs ?? 15 * 60_000) } }, { limit: 20 })) {
      await failUpload(this.options.deps, this.scopeOf(stale), stale._id, "upload_abandoned");
    }
    const candidates = await this.queue.find({ state: { $in: ["queued", "running"] }, lease_until: { $lt: now } }, { limit: 5 });
    for (const candidate of candidates) {
      if (this.stopped) return false;
      const leaseUntil = now + this.leaseMs();
      const claimed = await this.queue.forTenant(candidate.tenant).updateOne(
        { _id: candidate._id, state: { $in: ["queued", "running"] }, lease_until: { $lt: now } },
        { $set: { state: "running", lease_owner: this.owner, lease_until: leaseUntil, started_at: candidate.started_at ?? now, updated_at: now } },
      );
      if (!claimed) continue; // another worker won it
      await this.run(claimed);
      return true;
    }
    return false;
  }

  private leaseMs(): number {
    return this.options.leaseMs ?? 30_000;
  }

  private async run(job: ImportJobDoc): Promise<void> {
    const scope = this.scopeOf(job);
    // Ids only in logs: no addresses, no row values.
    this.options.logger.info({ import_id: job._id, from_row: job.row }, job.row > 0 ? "import resumed" : "import started");
    await runImport(this.options.deps, scope, job, {
      renew: async () => {
        if (this.stopped) return false;
        const now = this.options.deps.now();
        const held = await scope.imports.updateOne({ _id: job._id, state: "running", lease_owner: this.owner }, { $set: { lease_until: now + this.leaseMs() } });
        return held !== null;
      },
    });
    // Stopped mid-job (a clean shutdown): the lease is given back, so the next start resumes at once.
    if (this.stopped) await scope.imports.updateOne({ _id: job._id, state: "running", lease_owner: this.owner }, { $set: { lease_until: 0 } });
  }

  private scopeOf(job: ImportJobDoc): Scope {
    return {
      ...this.options.storage.forTenant(job.tenant),
      call: { tenant: tenantOfKey(job.tenant), actor: job.actor, requestId: job._id },
      origin: { source: "import", ip: job.ip, userAgent: job.user_agent },
    };
  }

  /** Stops looking for work; a job under way stops after its current batch (its lease then runs out for the next start). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }
}
