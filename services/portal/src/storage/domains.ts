import { DuplicateKeyError, type Collection, type Doc, type DocumentStore } from "@emailsvc/storage";
import type { DomainState, Progress } from "../domain/domain-states.js";

// Custom domains in the portal's own database. Two collections, each changed
// only by single-document guarded updates (no transactions):
//
//   custom_domains          one document per ACCOUNT (`_id` = account id) that
//                           claims a domain; unique index on `domain`, so one
//                           domain has one owner whatever the state. Deleting
//                           the claim deletes the document: the domain is free
//                           at once.
//   custom_domain_removals  the Kubernetes objects of a domain an account gave
//                           up (deleted, or replaced by another), to delete.
//                           Written BEFORE the claim changes (a collection
//                           written first): a crash in between leaves a removal
//                           whose domain is still claimed, which the reconciler
//                           drops without touching anything.
//
// Work is found by `next_check_at <= now` and claimed with a lease
// (`lease_owner`, `lease_until`): only one replica acts on a document at a
// time, and a replica that dies mid-work loses its lease after leaseMs. Every
// change the customer makes bumps `generation`; the reconciler's write is
// guarded by the generation it read, so a result computed for an older claim
// is dropped rather than written over a newer one.

export interface CustomDomainDoc extends Doc {
  /** The account id (the claim is per account, not per mode). */
  _id: string;
  account_id: string;
  domain: string;
  state: DomainState;
  reason: string;
  dns_checks: number;
  dns_since: number;
  issuing_since: number | null;
  issuance_attempts: number;
  last_check_at: number | null;
  /** null: nothing happens by itself (never matched by the due query). */
  next_check_at: number | null;
  activated_at: number | null;
  /** Progress.notBefore; absent in documents written before it existed. */
  not_before?: number;
  created_at: number;
  updated_at: number;
  generation: number;
  lease_owner: string | null;
  lease_until: number;
}

export interface RemovalDoc extends Doc {
  /** `<account id> <domain>`: one removal per account and domain. */
  _id: string;
  account_id: string;
  domain: string;
  attempts: number;
  next_check_at: number;
  created_at: number;
  lease_owner: string | null;
  lease_until: number;
}

export class DomainTakenError extends Error {
  constructor() {
    super("the domain is claimed by another account");
  }
}

export function progressOf(doc: CustomDomainDoc): Progress {
  return {
    state: doc.state,
    reason: doc.reason,
    dnsChecks: doc.dns_checks,
    dnsSince: doc.dns_since,
    issuingSince: doc.issuing_since,
    issuanceAttempts: doc.issuance_attempts,
    lastCheckAt: doc.last_check_at,
    nextCheckAt: doc.next_check_at,
    activatedAt: doc.activated_at,
    notBefore: doc.not_before ?? 0,
  };
}

function progressFields(p: Progress) {
  return {
    state: p.state,
    reason: p.reason,
    dns_checks: p.dnsChecks,
    dns_since: p.dnsSince,
    issuing_since: p.issuingSince,
    issuance_attempts: p.issuanceAttempts,
    last_check_at: p.lastCheckAt,
    next_check_at: p.nextCheckAt,
    activated_at: p.activatedAt,
    not_before: p.notBefore,
  };
}

const DOMAIN_INDEX = "domain_unique";

export class DomainStorage {
  readonly domains: Collection<CustomDomainDoc>;
  readonly removals: Collection<RemovalDoc>;

  constructor(store: DocumentStore) {
    this.domains = store.collection<CustomDomainDoc>("custom_domains");
    this.removals = store.collection<RemovalDoc>("custom_domain_removals");
  }

  async ensureIndexes(): Promise<void> {
    await this.domains.createIndexes([
      // One owner per domain; also the page's Host lookup and the claim check.
      { name: DOMAIN_INDEX, fields: { domain: 1 }, unique: true },
      // The reconciler's due query: find({next_check_at <= now}) sorted by next_check_at.
      { name: "next_check_at", fields: { next_check_at: 1 } },
    ]);
    // The reconciler's due query on removals.
    await this.removals.createIndexes([{ name: "next_check_at", fields: { next_check_at: 1 } }]);
  }

  /** The account's claim (every read of a customer's call is by its own account id). */
  forAccount(accountId: string): Promise<CustomDomainDoc | null> {
    return this.domains.findOne({ _id: accountId });
  }

  /** Who holds a domain (the page's Host check, the claim check). */
  byDomain(domain: string): Promise<CustomDomainDoc | null> {
    return this.domains.findOne({ domain });
  }

  /** A fresh claim; DomainTakenError when another account holds the domain, null when the account got one meanwhile. */
  async insertClaim(accountId: string, domain: string, progress: Progress, now: number): Promise<CustomDomainDoc | null> {
    const doc: CustomDomainDoc = {
      _id: accountId,
      account_id: accountId,
      domain,
      ...progressFields(progress),
      created_at: now,
      updated_at: now,
      generation: 1,
      lease_owner: null,
      lease_until: 0,
    };
    try {
      await this.domains.insertOne(doc);
      return doc;
    } catch (err) {
      if (!(err instanceof DuplicateKeyError)) throw err;
      const holder = await this.byDomain(domain);
      if (holder && holder._id !== accountId) throw new DomainTakenError();
      return null;
    }
  }

  /** Replaces the claim read at `generation` (another domain, or the same one started over); null when it changed meanwhile. */
  async replaceClaim(current: CustomDomainDoc, domain: string, progress: Progress, now: number): Promise<CustomDomainDoc | null> {
    try {
      return await this.domains.updateOne(
        { _id: current._id, generation: current.generation },
        {
          $set: {
            domain,
            ...progressFields(progress),
            ...(domain !== current.domain ? { created_at: now } : {}),
            updated_at: now,
            lease_owner: null,
            lease_until: 0,
          },
          $inc: { generation: 1 },
        },
      );
    } catch (err) {
      if (err instanceof DuplicateKeyError) throw new DomainTakenError();
      throw err;
    }
  }

  /** Makes a claim due now, or at its notBefore (the customer says the DNS is fixed); null when it changed meanwhile. */
  checkNow(current: CustomDomainDoc, now: number): Promise<CustomDomainDoc | null> {
    const at = Math.max(now, current.not_before ?? 0);
    return this.domains.updateOne({ _id: current._id, generation: current.generation }, { $set: { next_check_at: at, updated_at: now } });
  }

  /** Deletes the claim read at `generation`; false when it changed meanwhile. */
  deleteClaim(current: CustomDomainDoc): Promise<boolean> {
    return this.domains.deleteOne({ _id: current._id, generation: current.generation });
  }

  /** Queues the deletion of a domain's objects (idempotent: an existing removal is made due now). */
  async queueRemoval(accountId: string, domain: string, now: number): Promise<void> {
    const _id = `${accountId} ${domain}`;
    try {
      await this.removals.insertOne({ _id, account_id: accountId, domain, attempts: 0, next_check_at: now, created_at: now, lease_owner: null, lease_until: 0 });
    } catch (err) {
      if (!(err instanceof DuplicateKeyError)) throw err;
      await this.removals.updateOne({ _id }, { $set: { next_check_at: now, attempts: 0 } });
    }
  }

  /** Claims up to `limit` due documents for `owner` until `now + leaseMs` (a few more are read: other replicas may win some). */
  async claimDue(owner: string, now: number, leaseMs: number, limit: number): Promise<CustomDomainDoc[]> {
    const due = await this.domains.find({ next_check_at: { $lte: now }, lease_until: { $lte: now } }, { sort: { next_check_at: 1 }, limit: limit + 4 });
    const claimed: CustomDomainDoc[] = [];
    for (const doc of due) {
      if (claimed.length >= limit) break;
      const won = await this.domains.updateOne(
        { _id: doc._id, generation: doc.generation, lease_until: { $lte: now } },
        { $set: { lease_owner: owner, lease_until: now + leaseMs } },
      );
      if (won) claimed.push(won);
    }
    return claimed;
  }

  /** Stores the reconciler's result for the claim it leased; false when the customer changed it meanwhile (the result is dropped). */
  async saveProgress(doc: CustomDomainDoc, owner: string, progress: Progress, now: number): Promise<boolean> {
    const saved = await this.domains.updateOne(
      { _id: doc._id, generation: doc.generation, lease_owner: owner },
      { $set: { ...progressFields(progress), updated_at: now, lease_owner: null, lease_until: 0 } },
    );
    return saved !== null;
  }

  /** Gives a lease back without a result (work failed): due again at `nextCheckAt`. */
  async release(doc: CustomDomainDoc, owner: string, nextCheckAt: number): Promise<void> {
    await this.domains.updateOne({ _id: doc._id, generation: doc.generation, lease_owner: owner }, { $set: { lease_owner: null, lease_until: 0, next_check_at: nextCheckAt } });
  }

  async claimDueRemovals(owner: string, now: number, leaseMs: number, limit: number): Promise<RemovalDoc[]> {
    const due = await this.removals.find({ next_check_at: { $lte: now }, lease_until: { $lte: now } }, { sort: { next_check_at: 1 }, limit: limit + 4 });
    const claimed: RemovalDoc[] = [];
    for (const doc of due) {
      if (claimed.length >= limit) break;
      const won = await this.removals.updateOne({ _id: doc._id, lease_until: { $lte: now } }, { $set: { lease_owner: owner, lease_until: now + leaseMs } });
      if (won) claimed.push(won);
    }
    return claimed;
  }

  async finishRemoval(doc: RemovalDoc, owner: string): Promise<void> {
    await this.removals.deleteOne({ _id: doc._id, lease_owner: owner });
  }

  async retryRemoval(doc: RemovalDoc, owner: string, nextCheckAt: number): Promise<void> {
    await this.removals.updateOne({ _id: doc._id, lease_owner: owner }, { $set: { lease_owner: null, lease_until: 0, next_check_at: nextCheckAt }, $inc: { attempts: 1 } });
  }
}
