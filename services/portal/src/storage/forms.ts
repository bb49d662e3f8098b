import { CrossTenantCollection, TenantCollection, type Collection, type DocumentStore } from "@emailsvc/storage";
import type { FormFieldSpec } from "../domain/signup-form.js";

/** A signup form; `_id` is its public id (`frm_` and 26 random characters). */
export interface FormDoc {
  _id: string;
  tenant: string;
  name: string;
  tags: string[];
  optional_tags: string[];
  ask_locale: boolean;
  fields: FormFieldSpec[];
  success_url: string;
  error_url: string;
  allowed_origins: string[];
  consent_text: string;
  consent_version: string;
  created_at: number;
  updated_at: number;
}

/**
 * A proof-of-work challenge that was solved and used: `_id` is the challenge
 * (a hash), so a second use of it is a duplicate key. Kept until it expires
 * (after which the challenge is refused anyway), then swept.
 */
export interface UsedChallengeDoc {
  _id: string;
  tenant: string;
  expires_at: number;
}

/** The portal's signup forms and the challenges used on them. */
export class FormStorage {
  private readonly forms: Collection<FormDoc>;
  private readonly challenges: Collection<UsedChallengeDoc>;
  /**
   * The public endpoint learns the tenant from the form's id in the URL: the
   * one read across tenants, by `_id` (unguessable), which yields the
   * TenantCollection of that form's tenant.
   */
  readonly byPublicId: CrossTenantCollection<FormDoc>;

  constructor(store: DocumentStore) {
    this.forms = store.collection<FormDoc>("signup_forms");
    this.challenges = store.collection<UsedChallengeDoc>("signup_challenges");
    this.byPublicId = new CrossTenantCollection(this.forms, "a post to a public signup form names the form only; its tenant comes from the form");
  }

  async ensureIndexes(): Promise<void> {
    // ListForms: a tenant's forms in id order.
    await this.forms.createIndexes([{ name: "tenant_id", fields: { tenant: 1, _id: 1 } }]);
    // The sweep of a tenant's expired challenges.
    await this.challenges.createIndexes([{ name: "tenant_expires_at", fields: { tenant: 1, expires_at: 1 } }]);
  }

  forTenant(tenant: string): { forms: TenantCollection<FormDoc>; challenges: TenantCollection<UsedChallengeDoc> } {
    return { forms: new TenantCollection(this.forms, tenant), challenges: new TenantCollection(this.challenges, tenant) };
  }
}
