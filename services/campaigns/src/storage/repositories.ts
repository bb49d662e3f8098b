import { TenantCollection, type Collection, type DocumentStore } from "@emailsvc/storage";
import { CAMPAIGN_INDEXES, type CampaignDoc } from "./documents.js";

/** One tenant's collections: all a use case ever gets to read or write. */
export interface TenantRepositories {
  campaigns: TenantCollection<CampaignDoc>;
}

/** The service's collections; only this file holds them raw (see ARCHITECTURE.md, Tenancy). */
export class CampaignStorage {
  private readonly campaigns: Collection<CampaignDoc>;

  constructor(store: DocumentStore) {
    this.campaigns = store.collection<CampaignDoc>("campaigns");
  }

  async createIndexes(): Promise<void> {
    await this.campaigns.createIndexes(CAMPAIGN_INDEXES);
  }

  forTenant(tenant: string): TenantRepositories {
    return { campaigns: new TenantCollection(this.campaigns, tenant) };
  }
}
