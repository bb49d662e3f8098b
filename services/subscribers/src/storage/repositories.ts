import { CrossTenantCollection, TenantCollection, type Collection, type DocumentStore } from "@emailsvc/storage";
import {
  AUDIT_INDEXES,
  SUBSCRIBER_INDEXES,
  SUPPRESSION_INDEXES,
  TAG_INDEXES,
  type AuditDoc,
  type SubscriberDoc,
  type SuppressionDoc,
  type TagDoc,
} from "./documents.js";

/** One tenant's collections: all a use case ever gets to read or write. */
export interface TenantRepositories {
  subscribers: TenantCollection<SubscriberDoc>;
  tags: TenantCollection<TagDoc>;
  audit: TenantCollection<AuditDoc>;
  /** Keyed hashes of erased addresses. */
  suppressions: TenantCollection<SuppressionDoc>;
}

/**
 * The service's collections. Only this file holds them raw: the request path
 * gets one tenant's collections (`forTenant`, from the call's tenant), and the
 * two pieces of work that cross tenants get a named CrossTenantCollection each.
 */
export class SubscriberStorage {
  private readonly subscribers: Collection<SubscriberDoc>;
  private readonly tags: Collection<TagDoc>;
  private readonly audit: Collection<AuditDoc>;
  private readonly suppressions: Collection<SuppressionDoc>;

  constructor(store: DocumentStore) {
    this.subscribers = store.collection<SubscriberDoc>("subscribers");
    this.tags = store.collection<TagDoc>("tags");
    this.audit = store.collection<AuditDoc>("subscriber_events");
    this.suppressions = store.collection<SuppressionDoc>("suppressions");
  }

  async createIndexes(): Promise<void> {
    await Promise.all([
      this.subscribers.createIndexes(SUBSCRIBER_INDEXES),
      this.tags.createIndexes(TAG_INDEXES),
      this.audit.createIndexes(AUDIT_INDEXES),
      this.suppressions.createIndexes(SUPPRESSION_INDEXES),
    ]);
  }

  forTenant(tenant: string): TenantRepositories {
    return {
      subscribers: new TenantCollection(this.subscribers, tenant),
      tags: new TenantCollection(this.tags, tenant),
      audit: new TenantCollection(this.audit, tenant),
      suppressions: new TenantCollection(this.suppressions, tenant),
    };
  }

  /** For the outbox relay: its sweep finds pending outboxes of every tenant. */
  outboxSweep(): CrossTenantCollection<SubscriberDoc> {
    return new CrossTenantCollection(this.subscribers, "outbox relay: sweeps pending outboxes of every tenant");
  }

  /** For the outbox relay: a change's audit records go to the changed subscriber's tenant, named by the document. */
  auditOfChanges(): CrossTenantCollection<AuditDoc> {
    return new CrossTenantCollection(this.audit, "outbox relay: writes and erases audit trails in the changed document's tenant");
  }
}
