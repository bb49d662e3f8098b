import { collectionSet, collectionSpec, type CollectionsOf, type RepositoriesOf } from "@emailsvc/storage";
import {
  AUDIT_INDEXES,
  SUBSCRIBER_INDEXES,
  TAG_INDEXES,
  type AuditDoc,
  type SubscriberDoc,
  type TagDoc,
} from "./documents.js";

/** The service's collections: opened in server.ts, the only place that holds them. */
export const COLLECTIONS = collectionSet({
  subscribers: collectionSpec<SubscriberDoc>("subscribers", SUBSCRIBER_INDEXES),
  tags: collectionSpec<TagDoc>("tags", TAG_INDEXES),
  audit: collectionSpec<AuditDoc>("subscriber_events", AUDIT_INDEXES),
});

export type Collections = CollectionsOf<typeof COLLECTIONS.specs>;

/** One tenant's repositories: all a use case ever gets to read and write. */
export type Repositories = RepositoriesOf<typeof COLLECTIONS.specs>;
