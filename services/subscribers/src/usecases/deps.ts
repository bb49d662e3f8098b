import type { OutboxAfterWrite } from "@emailsvc/outbox";
import type { KeyRing } from "@emailsvc/tokens";
import type { Logger } from "@emailsvc/telemetry";
import type { CallContext } from "@emailsvc/tenancy";
import { notFound } from "@emailsvc/errors";
import { newId } from "@emailsvc/ids";
import { NO_AUDIT, type AuditInfo } from "../domain/audit.js";
import { isErasureMarker, suppressionHashes } from "../domain/suppression.js";
import type { SubscriberView } from "../domain/subscriber.js";
import type { TagView } from "../domain/tag.js";
import type { OutboxEntry, SubscriberDoc, SuppressionDoc, TagDoc } from "../storage/documents.js";
import type { TenantRepositories } from "../storage/repositories.js";

/**
 * What every use case needs besides its tenant's collections; built once in
 * server.ts. No collection here: data is reached through a Scope only.
 */
export interface Deps {
  /** Carries out a change's outbox right after its write (@emailsvc/outbox). */
  relay: OutboxAfterWrite<SubscriberDoc>;
  /** SUPPRESSION_KEYS: the keys of the hashes erased addresses are suppressed by (domain/suppression.ts). */
  suppressionKeys: KeyRing;
  /** SOFT_BOUNCE_LIMIT, SOFT_BOUNCE_WINDOW_DAYS (default 3 in 30 days; usecases/record-delivery-problem.ts). */
  softBounces?: { limit: number; windowMs: number };
  /** CONFIRMATION_EXPIRY_MIN_SECONDS: the shortest confirmation window an account may set (default 60; tests lower it). */
  minConfirmationExpirySeconds?: number;
  /** How long after a pending subscriber's last confirmation mail a signup again sends another (default 1 hour; tests shorten it). */
  confirmationResendAfterMs?: number;
  logger: Logger;
  now: () => number;
}

/** One call: its context and its tenant's collections (the only ones a use case gets). */
export interface Scope extends TenantRepositories {
  call: CallContext;
  /** How the call's request came (its AuditContext); every change it makes is audited with it. */
  origin?: AuditInfo;
}

export function outboxEntry(
  scope: Scope,
  at: number,
  type: string,
  audit: OutboxEntry["audit"],
  bus: OutboxEntry["bus"],
): OutboxEntry {
  const how = scope.origin ?? NO_AUDIT;
  return { id: newId("evt"), type, at, actor: scope.call.actor, source: how.source, ip: how.ip, user_agent: how.userAgent, audit, bus };
}

/** A live (not deleted) subscriber of the tenant, or 404. */
export async function loadSubscriber(scope: Scope, id: string): Promise<SubscriberDoc> {
  const doc = await scope.subscribers.findOne({ _id: id, deleted: false });
  if (!doc) throw notFound("subscriber");
  return doc;
}

export function tagView(doc: TagDoc, subscriberCount: number): TagView {
  return {
    id: doc._id,
    name: doc.name,
    description: doc.description,
    isPublic: doc.is_public,
    translations: doc.translations ?? {},
    subscriberCount,
    createdAt: doc.created_at,
    updatedAt: doc.updated_at,
  };
}

/** Resolves tag ids to names for a page of subscribers with one query. */
export async function subscriberViews(scope: Scope, docs: SubscriberDoc[]): Promise<SubscriberView[]> {
  const ids = [...new Set(docs.flatMap((d) => d.tag_ids))];
  const names = new Map<string, string>();
  if (ids.length > 0) {
    for (const tag of await scope.tags.find({ _id: { $in: ids } })) names.set(tag._id, tag.name);
  }
  return docs.map((d) => ({
    id: d._id,
    email: d.email,
    status: d.status,
    locale: d.locale ?? "",
    metadata: d.metadata,
    tags: d.tag_ids.flatMap((id) => names.get(id) ?? []).sort((a, b) => a.localeCompare(b)),
    createdAt: d.created_at,
    updatedAt: d.updated_at,
  }));
}

export async function subscriberView(scope: Scope, doc: SubscriberDoc): Promise<SubscriberView> {
  const [view] = await subscriberViews(scope, [doc]);
  return view!;
}


/** The suppression markers an address may have in the scope's tenant (one per key). */
export function markersOf(deps: Deps, scope: Scope, emailKey: string): string[] {
  return suppressionHashes(deps.suppressionKeys, scope.suppressions.tenant, emailKey).map((h) => h.hash);
}

/** Whether an address was erased at its owner's request (and not opted in again): its create is refused. */
export async function isSuppressed(deps: Deps, scope: Scope, emailKey: string): Promise<boolean> {
  return (await scope.suppressions.find({ _id: { $in: markersOf(deps, scope, emailKey) } })).some(isErasureMarker);
}

/** The address's entry on the suppression list, if any (under any key of the ring). */
export async function suppressionOf(deps: Deps, scope: Scope, emailKey: string): Promise<SuppressionDoc | undefined> {
  const [entry] = await scope.suppressions.find({ _id: { $in: markersOf(deps, scope, emailKey) } }, { limit: 1 });
  return entry;
}

/** The entries of many addresses at once (a campaign's batch), by lower-cased address: one query. */
export async function suppressionsOf(deps: Deps, scope: Scope, emailKeys: readonly string[]): Promise<Map<string, SuppressionDoc>> {
  const keyOf = new Map<string, string>();
  for (const key of new Set(emailKeys)) for (const marker of markersOf(deps, scope, key)) keyOf.set(marker, key);
  const found = new Map<string, SuppressionDoc>();
  if (keyOf.size === 0) return found;
  for (const entry of await scope.suppressions.find({ _id: { $in: [...keyOf.keys()] } })) found.set(keyOf.get(entry._id)!, entry);
  return found;
}
