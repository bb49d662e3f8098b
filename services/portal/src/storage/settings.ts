import { TenantCollection, type Collection, type Doc, type DocumentStore } from "@emailsvc/storage";

/** One account-and-mode's portal settings; `_id` is the tenant (one document each). */
export interface PortalSettingsDoc extends Doc {
  tenant: string;
  frame_ancestors: string[];
  /** How the pages name the sender; absent or "": they name none. */
  sender_name?: string;
  /** The logo above the pages' heading, an https URL; absent or "": none. */
  logo_url?: string;
  /** Buttons' and links' colour, "#rrggbb"; absent or "": the platform's. */
  brand_color?: string;
  updated_at: number;
}

/** The portal's own database: what accounts set for their page. `_id` is the tenant, so its own index serves every read. */
export class PortalStorage {
  private readonly settings: Collection<PortalSettingsDoc>;

  constructor(store: DocumentStore) {
    this.settings = store.collection<PortalSettingsDoc>("portal_settings");
  }

  forTenant(tenant: string): { settings: TenantCollection<PortalSettingsDoc> } {
    return { settings: new TenantCollection(this.settings, tenant) };
  }
}
