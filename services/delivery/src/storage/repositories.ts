import { TenantCollection, type Collection, type DocumentStore } from "@emailsvc/storage";
import { EMAIL_INDEXES, SANDBOX_INDEXES, type EmailDoc, type SandboxMessageDoc } from "./documents.js";

/** The service's collections as stored. Only the wiring (server.ts) holds these. */
export interface Collections {
  emails: Collection<EmailDoc>;
  sandbox: Collection<SandboxMessageDoc>;
}

/** Opens the collections and makes sure their indexes exist (idempotent, at every start). */
export async function openCollections(store: DocumentStore): Promise<Collections> {
  const collections: Collections = {
    emails: store.collection<EmailDoc>("emails"),
    sandbox: store.collection<SandboxMessageDoc>("sandbox_messages"),
  };
  await Promise.all([collections.emails.createIndexes(EMAIL_INDEXES), collections.sandbox.createIndexes(SANDBOX_INDEXES)]);
  return collections;
}

/** One tenant's repositories: all a use case or a consumer's handler ever gets to read and write. */
export interface Repositories {
  emails: TenantCollection<EmailDoc>;
  sandbox: TenantCollection<SandboxMessageDoc>;
}

export function repositoriesOf(collections: Collections, tenant: string): Repositories {
  return {
    emails: new TenantCollection(collections.emails, tenant),
    sandbox: new TenantCollection(collections.sandbox, tenant),
  };
}
