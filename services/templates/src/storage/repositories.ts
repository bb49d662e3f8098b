import { CrossTenantCollection, TenantCollection, type Collection, type DocumentStore } from "@emailsvc/storage";
import { TEMPLATE_INDEXES, VERSION_INDEXES, type TemplateDoc, type TemplateVersionDoc } from "./documents.js";

/** One tenant's collections: all a use case ever gets to read or write. */
export interface TenantRepositories {
  templates: TenantCollection<TemplateDoc>;
  versions: TenantCollection<TemplateVersionDoc>;
}

/**
 * The service's collections; only this file holds them raw (see
 * ARCHITECTURE.md, Tenancy). The request path gets one tenant's collections;
 * the one piece of work that crosses tenants, the purge sweep, gets a named
 * capability that only finds, and deletes within each template's tenant.
 */
export class TemplateStorage {
  private readonly templates: Collection<TemplateDoc>;
  private readonly versions: Collection<TemplateVersionDoc>;

  constructor(store: DocumentStore) {
    this.templates = store.collection<TemplateDoc>("templates");
    this.versions = store.collection<TemplateVersionDoc>("template_versions");
  }

  async createIndexes(): Promise<void> {
    await Promise.all([this.templates.createIndexes(TEMPLATE_INDEXES), this.versions.createIndexes(VERSION_INDEXES)]);
  }

  forTenant(tenant: string): TenantRepositories {
    return { templates: new TenantCollection(this.templates, tenant), versions: new TenantCollection(this.versions, tenant) };
  }

  /** For the purge sweep: deleted templates of every tenant whose retention has passed (each is then purged in its own tenant). */
  purgeSweep(): CrossTenantCollection<TemplateDoc> {
    return new CrossTenantCollection(this.templates, "templates purge: finds deleted templates of every tenant past their retention");
  }
}
