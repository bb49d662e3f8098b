import { CrossTenantCollection, TenantCollection, type Collection, type DocumentStore } from "@emailsvc/storage";
import { DELIVERY_INDEXES, ENDPOINT_INDEXES, type DeliveryDoc, type EndpointDoc } from "./documents.js";

/** One tenant's collections: all a use case ever gets to read or write. */
export interface TenantRepositories {
  endpoints: TenantCollection<EndpointDoc>;
  deliveries: TenantCollection<DeliveryDoc>;
}

/**
 * The service's collections; only this file holds them raw (ARCHITECTURE.md,
 * Tenancy). The one piece of work that crosses tenants, the sender, gets a
 * named capability that finds due deliveries and acts on each in its tenant.
 */
export class WebhookStorage {
  private readonly endpoints: Collection<EndpointDoc>;
  private readonly deliveries: Collection<DeliveryDoc>;

  constructor(store: DocumentStore) {
    this.endpoints = store.collection<EndpointDoc>("webhook_endpoints");
    this.deliveries = store.collection<DeliveryDoc>("webhook_deliveries");
  }

  async createIndexes(): Promise<void> {
    await Promise.all([this.endpoints.createIndexes(ENDPOINT_INDEXES), this.deliveries.createIndexes(DELIVERY_INDEXES)]);
  }

  forTenant(tenant: string): TenantRepositories {
    return { endpoints: new TenantCollection(this.endpoints, tenant), deliveries: new TenantCollection(this.deliveries, tenant) };
  }

  /** For the log's retention sweep: finished deliveries of every tenant past their retention (each then deleted in its own tenant). */
  finishedDeliveries(): CrossTenantCollection<DeliveryDoc> {
    return new CrossTenantCollection(this.deliveries, "webhook log retention: finds finished deliveries of every tenant past their retention");
  }

  /** For the sender: pending deliveries of every tenant that are due (each is then claimed and sent in its own tenant). */
  dueDeliveries(): CrossTenantCollection<DeliveryDoc> {
    return new CrossTenantCollection(this.deliveries, "webhook sender: finds due deliveries of every tenant");
  }
}
