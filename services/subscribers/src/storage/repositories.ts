import { CrossTenantCollection, TenantCollection, type Collection, type DocumentStore } from "@emailsvc/storage";
import {
  AUDIT_INDEXES,
  IMPORT_CHUNK_INDEXES,
  IMPORT_ERROR_INDEXES,
  IMPORT_JOB_INDEXES,
  type ImportChunkDoc,
  type ImportErrorDoc,
  type ImportJobDoc,
  PRIVACY_REQUEST_INDEXES,
  SUBSCRIBER_INDEXES,
  SOFT_BOUNCE_INDEXES,
  SUPPRESSION_INDEXES,
  TAG_INDEXES,
  type AudienceSettingsDoc,
  type SoftBounceDoc,
  type AuditDoc,
  type PrivacyRequestDoc,
  type SubscriberDoc,
  type SuppressionDoc,
  type TagDoc,
} from "./documents.js";

/** One tenant's collections: all a use case ever gets to read or write. */
export interface TenantRepositories {
  subscribers: TenantCollection<SubscriberDoc>;
  tags: TenantCollection<TagDoc>;
  audit: TenantCollection<AuditDoc>;
  /** The suppression list: by keyed hash of the address (erased people: the hash alone). */
  suppressions: TenantCollection<SuppressionDoc>;
  /** Soft bounces per address (keyed hash), counted toward suppression. */
  softBounces: TenantCollection<SoftBounceDoc>;
  /** The log of export and erasure requests (no personal data). */
  privacyRequests: TenantCollection<PrivacyRequestDoc>;
  /** The account's double opt-in settings (one document, `_id` = tenant). */
  audienceSettings: TenantCollection<AudienceSettingsDoc>;
  /** Bulk import jobs, their stored chunks (MongoDB; files on the embedded store) and their reports. */
  imports: TenantCollection<ImportJobDoc>;
  importChunks: TenantCollection<ImportChunkDoc>;
  importErrors: TenantCollection<ImportErrorDoc>;
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
  private readonly softBounces: Collection<SoftBounceDoc>;
  private readonly privacyRequests: Collection<PrivacyRequestDoc>;
  private readonly audienceSettings: Collection<AudienceSettingsDoc>;
  private readonly imports: Collection<ImportJobDoc>;
  private readonly importChunks: Collection<ImportChunkDoc>;
  private readonly importErrors: Collection<ImportErrorDoc>;

  constructor(store: DocumentStore) {
    this.subscribers = store.collection<SubscriberDoc>("subscribers");
    this.tags = store.collection<TagDoc>("tags");
    this.audit = store.collection<AuditDoc>("subscriber_events");
    this.suppressions = store.collection<SuppressionDoc>("suppressions");
    this.softBounces = store.collection<SoftBounceDoc>("soft_bounces");
    this.privacyRequests = store.collection<PrivacyRequestDoc>("privacy_requests");
    this.audienceSettings = store.collection<AudienceSettingsDoc>("audience_settings");
    this.imports = store.collection<ImportJobDoc>("imports");
    this.importChunks = store.collection<ImportChunkDoc>("import_chunks");
    this.importErrors = store.collection<ImportErrorDoc>("import_errors");
  }

  async createIndexes(): Promise<void> {
    await Promise.all([
      this.subscribers.createIndexes(SUBSCRIBER_INDEXES),
      this.tags.createIndexes(TAG_INDEXES),
      this.audit.createIndexes(AUDIT_INDEXES),
      this.suppressions.createIndexes(SUPPRESSION_INDEXES),
      this.softBounces.createIndexes(SOFT_BOUNCE_INDEXES),
      this.privacyRequests.createIndexes(PRIVACY_REQUEST_INDEXES),
      this.imports.createIndexes(IMPORT_JOB_INDEXES),
      this.importChunks.createIndexes(IMPORT_CHUNK_INDEXES),
      this.importErrors.createIndexes(IMPORT_ERROR_INDEXES),
    ]);
  }

  forTenant(tenant: string): TenantRepositories {
    return {
      subscribers: new TenantCollection(this.subscribers, tenant),
      tags: new TenantCollection(this.tags, tenant),
      audit: new TenantCollection(this.audit, tenant),
      suppressions: new TenantCollection(this.suppressions, tenant),
      softBounces: new TenantCollection(this.softBounces, tenant),
      privacyRequests: new TenantCollection(this.privacyRequests, tenant),
      audienceSettings: new TenantCollection(this.audienceSettings, tenant),
      imports: new TenantCollection(this.imports, tenant),
      importChunks: new TenantCollection(this.importChunks, tenant),
      importErrors: new TenantCollection(this.importErrors, tenant),
    };
  }

  /** For the outbox relay: its sweep finds pending outboxes of every tenant. */
  outboxSweep(): CrossTenantCollection<SubscriberDoc> {
    return new CrossTenantCollection(this.subscribers, "outbox relay: sweeps pending outboxes of every tenant");
  }

  /** For the expiry sweep: unconfirmed pending subscribers past their deadline, in every tenant. */
  expiredPending(): CrossTenantCollection<SubscriberDoc> {
    return new CrossTenantCollection(this.subscribers, "expiry sweep: finds unconfirmed pending subscribers past their deadline in every tenant");
  }

  /** For the import worker: it claims queued jobs of every tenant, and fails uploads left unfinished. */
  importQueue(): CrossTenantCollection<ImportJobDoc> {
    return new CrossTenantCollection(this.imports, "import worker: claims jobs and reaps stale uploads of every tenant");
  }

  /** For the outbox relay: an erasure's log record is marked done in the erased subscriber's tenant. */
  erasureRequests(): CrossTenantCollection<PrivacyRequestDoc> {
    return new CrossTenantCollection(this.privacyRequests, "outbox relay: marks an erasure done in the erased subscriber's tenant");
  }

  /**
   * After an erasure: rewrites the datafiles that held the subscriber (the
   * document with its earlier states, its audit trail) so that no deleted
   * bytes stay in them (Collection.compact; nothing on MongoDB).
   */
  async compactAfterErasure(): Promise<void> {
    await Promise.all([this.subscribers.compact(), this.audit.compact()]);
  }

  /** For the outbox relay: a change's audit records go to the changed subscriber's tenant, named by the document. */
  auditOfChanges(): CrossTenantCollection<AuditDoc> {
    return new CrossTenantCollection(this.audit, "outbox relay: writes and erases audit trails in the changed document's tenant");
  }
}
