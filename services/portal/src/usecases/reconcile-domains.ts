import { randomUUID } from "node:crypto";
import type { CounterStore, Policy } from "@emailsvc/ratelimit";
import type { Logger } from "@emailsvc/telemetry";
import {
  afterCertificateCheck,
  afterDnsCheck,
  backoff,
  dnsVerdict,
  issued,
  queued,
  retry,
  type CnameAnswer,
  type Progress,
  type Timing,
} from "../domain/domain-states.js";
import { progressOf, type CustomDomainDoc, type DomainStorage, type RemovalDoc } from "../storage/domains.js";
import type { CnameResolver, DomainRouting, DomainTarget } from "./custom-domains.js";

// The loop that moves custom domains along (domain/domain-states.ts says
// how). Every replica runs one; the work is in the database (next_check_at),
// so it survives restarts, and each document is leased by one replica at a
// time (storage/domains.ts), so replicas share the work without acting twice.
// Issuance is drawn from one budget in the shared store: replicas together
// create at most CUSTOM_DOMAIN_ISSUE_RATE new Certificates.

export interface ReconcilerDeps {
  storage: DomainStorage;
  routing: DomainRouting;
  resolveCname: CnameResolver;
  /** Where the issuance budget is counted: a DocumentCounterStore on the portal's database (shared by replicas). */
  budget: CounterStore;
  /** New Certificates per window, platform-wide (CUSTOM_DOMAIN_ISSUE_RATE). */
  issueRate: Policy;
  /** CUSTOM_DOMAIN_TARGET. */
  target: string;
  timing: Timing;
  logger: Logger;
  now: () => number;
  /** Told when a domain became active or stopped being so (the page's Host cache). */
  changed?: (accountId: string, domain: string) => void;
  /** This replica's name on leases; default a random one. */
  owner?: string;
  /** How long a lease holds (default 60 s): longer than one domain's work. */
  leaseMs?: number;
  /** Longest wait for one DNS lookup (default 10 s). */
  dnsTimeoutMs?: number;
  /** Domains and removals handled per pass, each (default 20). */
  batch?: number;
}

const BUDGET_KEY = "custom_domain_issuance";

export interface PassResult {
  domains: number;
  removals: number;
}

export class DomainReconciler {
  private readonly owner: string;
  private readonly leaseMs: number;
  private readonly batch: number;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private stopped = true;

  constructor(private readonly deps: ReconcilerDeps) {
    this.owner = deps.owner ?? `portal-${randomUUID()}`;
    this.leaseMs = deps.leaseMs ?? 60_000;
    this.batch = deps.batch ?? 20;
  }

  /** Runs a pass every `intervalMs` until stop(). */
  start(intervalMs: number): void {
    this.stopped = false;
    const loop = () => {
      if (this.stopped) return;
      this.running = this.pass()
        .catch((err: unknown) => this.deps.logger.warn({ err: message(err) }, "custom domain pass failed"))
        .finally(() => {
          this.running = undefined;
          if (!this.stopped) {
            this.timer = setTimeout(loop, intervalMs);
            this.timer.unref();
          }
        });
    };
    loop();
  }

  /** Stops after the pass under way. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }

  /** One pass: due removals, then due domains, one leased document at a time. */
  async pass(): Promise<PassResult> {
    const result: PassResult = { domains: 0, removals: 0 };
    for (let i = 0; i < this.batch; i++) {
      const [removal] = await this.deps.storage.claimDueRemovals(this.owner, this.deps.now(), this.leaseMs, 1);
      if (!removal) break;
      await this.remove(removal);
      result.removals++;
    }
    for (let i = 0; i < this.batch; i++) {
      const [doc] = await this.deps.storage.claimDue(this.owner, this.deps.now(), this.leaseMs, 1);
      if (!doc) break;
      try {
        await this.step(doc);
      } catch (err) {
        // Kubernetes or the store failed: the domain stays as it was and is looked at again later.
        this.deps.logger.warn({ account_id: doc._id, state: doc.state, err: message(err) }, "custom domain step failed");
        await this.deps.storage.release(doc, this.owner, this.deps.now() + this.deps.timing.recheckBaseMs).catch(() => undefined);
      }
      result.domains++;
    }
    return result;
  }

  private async remove(removal: RemovalDoc): Promise<void> {
    const { storage, routing, logger } = this.deps;
    try {
      const current = await storage.forAccount(removal.account_id);
      // Claimed again meanwhile (or the claim never changed): its objects are in use.
      if (current?.domain !== removal.domain) await routing.remove({ accountId: removal.account_id, domain: removal.domain });
      await storage.finishRemoval(removal, this.owner);
      logger.info({ account_id: removal.account_id }, "custom domain objects removed");
    } catch (err) {
      logger.warn({ account_id: removal.account_id, attempts: removal.attempts, err: message(err) }, "custom domain removal failed; retried");
      await storage.retryRemoval(removal, this.owner, this.deps.now() + backoff(this.deps.timing.recheckBaseMs, removal.attempts, 3_600_000));
    }
  }

  private async step(doc: CustomDomainDoc): Promise<void> {
    const { storage, routing, timing } = this.deps;
    const target: DomainTarget = { accountId: doc._id, domain: doc.domain };
    const before = doc.state;
    let progress: Progress = progressOf(doc);
    let created = false;
    const now = this.deps.now();
    if (progress.state === "failed") progress = retry(progress, now);
    if (progress.state === "pending_dns") {
      const step = afterDnsCheck(progress, dnsVerdict(doc.domain, this.deps.target, await this.lookup(doc.domain)), now, timing);
      progress = step.progress;
      if (step.effect === "issue") {
        const outcome = await this.deps.budget.consume([{ key: BUDGET_KEY, policy: this.deps.issueRate }], now);
        if (outcome.allowed) {
          await routing.ensure(target);
          created = true;
          progress = issued(progress, now, timing);
        } else {
          progress = queued(progress, now, outcome.retryAfterMs);
        }
      }
    } else {
      const step = afterCertificateCheck(progress, await routing.status(target), now, timing);
      if (step.effect === "remove_objects") await routing.remove(target);
      progress = step.progress;
    }
    const saved = await storage.saveProgress(doc, this.owner, progress, now);
    if (!saved) {
      // The customer changed or deleted the claim meanwhile; objects made for the old one must not stay.
      const current = await storage.forAccount(doc._id);
      if (created && current?.domain !== doc.domain) await storage.queueRemoval(doc._id, doc.domain, this.deps.now());
      return;
    }
    if (before !== progress.state) {
      this.deps.logger.info({ account_id: doc._id, from: before, to: progress.state }, "custom domain state changed");
      if (before === "active" || progress.state === "active") this.deps.changed?.(doc._id, doc.domain);
    }
  }

  private async lookup(domain: string): Promise<CnameAnswer> {
    const timeoutMs = this.deps.dnsTimeoutMs ?? 10_000;
    let timer: NodeJS.Timeout | undefined;
    try {
      const cnames = await Promise.race([
        this.deps.resolveCname(domain),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(Object.assign(new Error("DNS lookup timed out"), { code: "ETIMEOUT" })), timeoutMs);
        }),
      ]);
      return { cnames };
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      return { error: typeof code === "string" ? code : "ESERVFAIL" };
    } finally {
      clearTimeout(timer);
    }
  }
}

function message(err: unknown): string {
  return err instanceof Error ? err.message.slice(0, 300) : String(err);
}
