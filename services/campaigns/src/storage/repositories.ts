import { CrossTenantCollection, TenantCollection, type Collection, type DocumentStore } from "@emailsvc/storage";
import {
  CAMPAIGN_INDEXES,
  FIRE_INDEXES,
  RECIPIENT_INDEXES,
  TRIGGER_INDEXES,
  type CampaignDoc,
  type FireDoc,
  type RecipientDoc,
  type TriggerDoc,
} from "./documents.js";

/** One tenant's collections: all a use case ever gets to read or write. */
export interface TenantRepositories {
  campaigns: TenantCollection<CampaignDoc>;
  /** The ledger: one row per recipient of a campaign. */
  recipients: TenantCollection<RecipientDoc>;
  triggers: TenantCollection<TriggerDoc>;
  fires: TenantCollection<FireDoc>;
}

/**
 * The service's collections; only this file holds them raw (see
 * ARCHITECTURE.md, Tenancy). The request path gets one tenant's collections;
 * the two pieces of work that cross tenants get a named capability each.
 */
export class CampaignStorage {
  private readonly campaigns: Collection<CampaignDoc>;
  private readonly recipients: Collection<RecipientDoc>;
  private readonly triggers: Collection<TriggerDoc>;
  private readonly fires: Collection<FireDoc>;

  constructor(store: DocumentStore) {
    this.campaigns = store.collection<CampaignDoc>("campaigns");
    this.recipients = store.collection<RecipientDoc>("campaign_recipients");
    this.triggers = store.collection<TriggerDoc>("triggers");
    this.fires = store.collection<FireDoc>("trigger_fires");
  }

  async createIndexes(): Promise<void> {
    await Promise.all([
      this.campaigns.createIndexes(CAMPAIGN_INDEXES),
      this.recipients.createIndexes(RECIPIENT_INDEXES),
      this.triggers.createIndexes(TRIGGER_INDEXES),
      this.fires.createIndexes(FIRE_INDEXES),
    ]);
  }

  forTenant(tenant: string): TenantRepositories {
    return {
      campaigns: new TenantCollection(this.campaigns, tenant),
      recipients: new TenantCollection(this.recipients, tenant),
      triggers: new TenantCollection(this.triggers, tenant),
      fires: new TenantCollection(this.fires, tenant),
    };
  }

  /** For the consumer of subscriber events: each event's tenant comes from its checked meta. */
  eventTenants(): { forTenant(tenant: string): TenantRepositories } {
    return { forTenant: (tenant) => this.forTenant(tenant) };
  }

  /**
   * After an erasure: rewrites the ledger's and the fires' datafiles so that
   * the erased rows leave them (Collection.compact; nothing on MongoDB).
   */
  async compactAfterErasure(): Promise<void> {
    await Promise.all([this.recipients.compact(), this.fires.compact()]);
  }

  /** For the dispatcher: campaigns of every tenant that are sending or scheduled. */
  campaignsToDispatch(): CrossTenantCollection<CampaignDoc> {
    return new CrossTenantCollection(this.campaigns, "campaign dispatcher: finds sending and scheduled campaigns of every tenant");
  }

  /** For the outbox relay: campaigns of every tenant whose status change is not published yet. */
  outboxSweep(): CrossTenantCollection<CampaignDoc> {
    return new CrossTenantCollection(this.campaigns, "outbox relay: sweeps pending outboxes of every tenant");
  }

  /** For the firer: pending fires of every tenant that are due. */
  dueFires(): CrossTenantCollection<FireDoc> {
    return new CrossTenantCollection(this.fires, "trigger firer: sends the due fires of every tenant");
  }
}
