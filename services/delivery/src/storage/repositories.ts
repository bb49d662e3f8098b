import { collectionSet, collectionSpec, type CollectionsOf, type RepositoriesOf } from "@emailsvc/storage";
import { EMAIL_INDEXES, SANDBOX_INDEXES, type EmailDoc, type SandboxMessageDoc } from "./documents.js";

/** The service's collections: opened in server.ts, the only place that holds them. */
export const COLLECTIONS = collectionSet({
  emails: collectionSpec<EmailDoc>("emails", EMAIL_INDEXES),
  sandbox: collectionSpec<SandboxMessageDoc>("sandbox_messages", SANDBOX_INDEXES),
});

export type Collections = CollectionsOf<typeof COLLECTIONS.specs>;

/** One tenant's repositories: all a use case or a consumer's handler ever gets to read and write. */
export type Repositories = RepositoriesOf<typeof COLLECTIONS.specs>;
