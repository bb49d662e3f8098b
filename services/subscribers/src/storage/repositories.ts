import { TenantCollection, type Collection, type DocumentStore } from "@emailsvc/storage";
import {
  AUDIT_INDEXES,
  SUBSCRIBER_INDEXES,
  TAG_INDEXES,
  type AuditDoc,
  type SubscriberDoc,
  type TagDoc,
} from "./documents.js";

/** The service's collections as stored. Only the wiring (server.ts) holds these. */
export interface Collections {
  subscribers: Collection<SubscriberDoc>;
  tags: Collection<TagDoc>;
  audit: Collection<AuditDoc>;
}

/** Opens the collections and makes sure their indexes exist (idempotent, at every start). */
export async function openCollections(store: DocumentStore): Promise<Collections> {
  const collections: Collections = {
    subscribers: store.collection<SubscriberDoc>("subscribers"),
    tags: store.collection<TagDoc>("tags"),
    audit: store.collection<AuditDoc>("subscriber_events"),
  };
  await Promise.all([
    collections.subscribers.createIndexes(SUBSCRIBER_INDEXES),
    collections.tags.createIndexes(TAG_INDEXES),
    collections.audit.createIndexes(AUDIT_INDEXES),
  ]);
  return collections;
}

/** One tenant's repositories: all a use case ever gets to read and write. */
export interface Repositories {
  subscribers: TenantCollection<SubscriberDoc>;
  tags: TenantCollection<TagDoc>;
  audit: TenantCollection<AuditDoc>;
}

export function repositoriesOf(collections: Collections, tenant: string): Repositories {
  return {
    subscribers: new TenantCollection(collections.subscribers, tenant),
    tags: new TenantCollection(collections.tags, tenant),
    audit: new TenantCollection(collections.audit, tenant),
  };
}
