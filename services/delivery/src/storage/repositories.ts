import { CrossTenantCollection, TenantCollection, type Collection, type DocumentStore } from "@emailsvc/storage";
import { SandboxArchive, type SandboxSettings, type TenantSandbox } from "./sandbox-messages.js";
import {
  CANCELLED_CAMPAIGN_INDEXES,
  EMAIL_INDEXES,
  PAUSED_CAMPAIGN_INDEXES,
  SENDER_DOMAIN_INDEXES,
  type CancelledCampaignDoc,
  type EmailDoc,
  type PausedCampaignDoc,
  type SandboxMessageDoc,
  type SenderDomainDoc,
  type StoredEmailDoc,
} from "./documents.js";
import { EmailRecords } from "./email-records.js";

/** One tenant's collections: all a use case ever gets to read or write. */
export interface TenantRepositories {
  /** The tenant key `<account id>:<mode>`. */
  tenant: string;
  emails: TenantCollection<EmailDoc>;
  /** The tenant's messages kept by the sandbox (rows and bodies). */
  sandbox: TenantSandbox;
  cancelledCampaigns: TenantCollection<CancelledCampaignDoc>;
  pausedCampaigns: TenantCollection<PausedCampaignDoc>;
  /** The tenant's sending domains, with their sealed DKIM keys. */
  senderDomains: TenantCollection<SenderDomainDoc>;
}

/**
 * The service's collections. Only this file holds them raw: the request path
 * gets one tenant's collections (`forTenant`, from the call's tenant), and each
 * piece of work that crosses tenants gets its own named capability below.
 */
export class DeliveryStorage {
  private readonly emails: Collection<EmailDoc>;
  private readonly sandbox: Collection<SandboxMessageDoc>;
  private readonly cancelled: Collection<CancelledCampaignDoc>;
  private readonly paused: Collection<PausedCampaignDoc>;
  private readonly senderDomains: Collection<SenderDomainDoc>;
  /** The sandbox's kept messages of every tenant, with their retention and cap. */
  private readonly archive: SandboxArchive;

  constructor(store: DocumentStore, sandbox: SandboxSettings = {}, onError?: (what: string, err: unknown) => void) {
    // Stored without the fields holding their defaults, read whole (email-records.ts).
    this.emails = new EmailRecords(store.collection<StoredEmailDoc>("emails"));
    this.sandbox = store.collection<SandboxMessageDoc>("sandbox_messages");
    this.cancelled = store.collection<CancelledCampaignDoc>("cancelled_campaigns");
    this.paused = store.collection<PausedCampaignDoc>("paused_campaigns");
    this.senderDomains = store.collection<SenderDomainDoc>("sender_domains");
    this.archive = new SandboxArchive(
      new CrossTenantCollection(this.sandbox, "sandbox: keeps each message in the tenant of its email; the retention sweep deletes expired messages of every tenant"),
      sandbox,
      onError,
    );
  }

  async createIndexes(): Promise<void> {
    await Promise.all([
      this.emails.createIndexes(EMAIL_INDEXES),
      this.sandbox.createIndexes(this.archive.indexes),
      this.cancelled.createIndexes(CANCELLED_CAMPAIGN_INDEXES),
      this.paused.createIndexes(PAUSED_CAMPAIGN_INDEXES),
      this.senderDomains.createIndexes(SENDER_DOMAIN_INDEXES),
    ]);
  }

  forTenant(tenant: string): TenantRepositories {
    return {
      tenant,
      emails: new TenantCollection(this.emails, tenant),
      sandbox: this.archive.forTenant(tenant),
      cancelledCampaigns: new TenantCollection(this.cancelled, tenant),
      pausedCampaigns: new TenantCollection(this.paused, tenant),
      senderDomains: new TenantCollection(this.senderDomains, tenant),
    };
  }

  /** For the outbox relay: its sweep finds pending outboxes of every tenant. */
  outboxSweep(): CrossTenantCollection<EmailDoc> {
    return new CrossTenantCollection(this.emails, "outbox relay: sweeps pending outboxes of every tenant");
  }

  /** For the stalled-mail sweep: queued emails of every tenant that nothing is happening to. */
  stalledSweep(): CrossTenantCollection<EmailDoc> {
    return new CrossTenantCollection(this.emails, "stalled-mail sweep: finds queued emails of every tenant untouched for long");
  }

  /** For the sending domains' re-check: pending domains of every tenant whose next check is due. */
  senderDomainRechecks(): CrossTenantCollection<SenderDomainDoc> {
    return new CrossTenantCollection(this.senderDomains, "sender-domain re-check: finds pending domains of every tenant whose next check is due");
  }

  /** For the retry sweep: deferred emails of every tenant whose next attempt is due. */
  retrySweep(): CrossTenantCollection<EmailDoc> {
    return new CrossTenantCollection(this.emails, "retry sweep: finds deferred emails of every tenant whose next attempt is due");
  }

  /** For the bounce receiver: the email a signed return path names, in whichever tenant it is (its id is all a report carries). */
  returnPathEmails(): CrossTenantCollection<EmailDoc> {
    return new CrossTenantCollection(this.emails, "bounce receiver: finds the email a signed return path names, in its tenant");
  }

  /**
   * For provider notifications (SES through SNS): the email a notification
   * names by the provider's message id, in whichever tenant it is (a
   * signed notification names no tenant). Found, its tenant's own
   * collections do the writing.
   */
  providerNotificationEmails(): CrossTenantCollection<EmailDoc> {
    return new CrossTenantCollection(this.emails, "provider notifications: find the email a signed notification names by provider_message_id, in its tenant");
  }

  /** For the stalled-mail sweep: the paused campaigns of every tenant, whose held emails it leaves alone. */
  pausedCampaignsOfAll(): CrossTenantCollection<PausedCampaignDoc> {
    return new CrossTenantCollection(this.paused, "stalled-mail sweep: leaves the held emails of every tenant's paused campaigns alone");
  }

  /**
   * For the consumer of email.send.requested and subscriber.deleted: the tenant
   * of each event comes from its (checked) meta, not from a call.
   */
  eventTenants(): { forTenant(tenant: string): TenantRepositories } {
    const emails = new CrossTenantCollection(this.emails, "send consumer: an event's meta names the tenant of its email");
    const cancelled = new CrossTenantCollection(this.cancelled, "send consumer: a campaign.status_changed event names its tenant");
    const paused = new CrossTenantCollection(this.paused, "send consumer: a campaign.status_changed event names its tenant");
    const senderDomains = new CrossTenantCollection(this.senderDomains, "send consumer: an email's tenant signs with its own sending domains");
    // The sandbox's tenant views: erasure deletes the kept messages of the event's tenant.
    return {
      forTenant: (tenant) => ({
        tenant,
        emails: emails.forTenant(tenant),
        sandbox: this.archive.forTenant(tenant),
        cancelledCampaigns: cancelled.forTenant(tenant),
        pausedCampaigns: paused.forTenant(tenant),
        senderDomains: senderDomains.forTenant(tenant),
      }),
    };
  }

  /**
   * After an erasure: rewrites the datafiles of the emails and the sandboxed
   * messages so that the erased lines leave them (Collection.compact; nothing
   * on MongoDB).
   */
  async compactAfterErasure(): Promise<void> {
    await Promise.all([this.emails.compact(), this.sandbox.compact()]);
  }

  /** For the sandbox provider: it keeps each message in the tenant of the email being sent, and runs the retention sweep. */
  sandboxKeeper(): SandboxArchive {
    return this.archive;
  }
}
