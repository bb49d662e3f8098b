import { SubscriberStatus, type Mailability, type Subscriber, type Tag } from "@emailsvc/proto";
import { AppError } from "@emailsvc/errors";
import { type CallContext } from "@emailsvc/tenancy";
import type { SubscriberDirectory } from "../rpc/clients.js";
import type { PreferenceBudgets } from "./budgets.js";

// What a subscriber may do about themself, on the subscriber of a verified
// preference token. Shared by the REST API (through PreferenceCenterService)
// and the portal page, so both behave alike and draw from one budget: each
// operation charges the subscriber's budget of its class first (budgets.ts).

export interface PortalTagView {
  id: string;
  name: string;
  description: string;
  /** Name and description by locale, as the tag's owner gave them. */
  translations: Record<string, { name: string; description: string }>;
}

export interface PreferencesView {
  subscriberId: string;
  email: string;
  status: SubscriberStatus;
  /** en, de, fr, it; "" while unset. */
  locale: string;
  /** Public tags the subscriber holds. */
  subscribedTags: PortalTagView[];
  /** Every public tag. */
  availableTags: PortalTagView[];
  /**
   * Whether they get marketing and transactional mail now: the subscribers
   * service's answer (services/subscribers, "Who may be mailed"), which the
   * page shows lists by and never decides again from the status.
   */
  mailability: Mailability;
}

export interface PortalDeps {
  subscribers: SubscriberDirectory;
  /** The subscriber's and the tenant's budgets, charged by every operation here. */
  budgets: PreferenceBudgets;
}

/** One portal request: the tenant and actor (`portal`) and the token's subscriber. */
export interface PortalCall {
  call: CallContext;
  subscriberId: string;
  /** The subscriber's client, for the audit trail (personal data: erased with the subscriber). */
  client: { ip: string; userAgent: string };
  /** Where an admitted request's RateLimit headers go (the gRPC answer's metadata); the page leaves it out. */
  rateLimitHeaders?: (headers: Record<string, string>) => void;
}

/**
 * The answer for a subscriber that no longer exists: the same as for a bad
 * token, since erasure ends every token of the subscriber at once.
 */
export const tokenSubjectGone = () =>
  new AppError("unauthenticated", "invalid_preference_token", "This preference link is no longer valid; ask for a new one.");

const tagNotFound = () => new AppError("not_found", "tag_not_found", "No public tag has this id.");

function tagView(tag: Tag): PortalTagView {
  const translations = Object.fromEntries(Object.entries(tag.translations).map(([locale, t]) => [locale, { name: t.name, description: t.description }]));
  return { id: tag.id, name: tag.name, description: tag.description, translations };
}

async function subscriberOf(deps: PortalDeps, portal: PortalCall): Promise<Subscriber> {
  const subscriber = await deps.subscribers.get(portal.call, portal.subscriberId);
  if (!subscriber) throw tokenSubjectGone();
  return subscriber;
}

/** The view of `subscriber` as it is after a change (or a read), with the subscribers service's answer of who receives what. */
async function view(deps: PortalDeps, portal: PortalCall, subscriber: Subscriber, tags?: Tag[]): Promise<PreferencesView> {
  const [allTags, mailability] = await Promise.all([tags ?? deps.subscribers.tags(portal.call), deps.subscribers.mailability(portal.call, subscriber.id)]);
  // Erased between the change and this read: the token died with them.
  if (!mailability) throw tokenSubjectGone();
  const held = new Set(subscriber.tags);
  // Private tags are the integrator's business (segments, imports): never shown, never changed here.
  const visible = allTags.filter((t) => t.isPublic);
  return {
    subscriberId: subscriber.id,
    email: subscriber.email,
    status: subscriber.status,
    locale: subscriber.locale,
    subscribedTags: visible.filter((t) => held.has(t.name)).map(tagView),
    availableTags: visible.map(tagView),
    mailability,
  };
}

export async function getPreferences(deps: PortalDeps, portal: PortalCall): Promise<PreferencesView> {
  await deps.budgets.charge(portal, "read");
  const [subscriber, tags] = await Promise.all([subscriberOf(deps, portal), deps.subscribers.tags(portal.call)]);
  return view(deps, portal, subscriber, tags);
}

/**
 * Joins a public tag. A subscriber who had unsubscribed from everything and
 * now joins a list has opted in again, by their own hand: active again. A
 * bounced or complained address stays as it is (that is the mail system's
 * verdict, not a preference).
 */
export async function subscribeTag(deps: PortalDeps, portal: PortalCall, tagId: string): Promise<PreferencesView> {
  await deps.budgets.charge(portal, "write");
  const [subscriber, tag] = await Promise.all([subscriberOf(deps, portal), deps.subscribers.tag(portal.call, tagId)]);
  if (!tag || !tag.isPublic) throw tagNotFound();
  let current = subscriber;
  if (!current.tags.includes(tag.name)) current = await deps.subscribers.addTag(portal.call, portal.subscriberId, tag.name, portal.client);
  if (current.status === SubscriberStatus.UNSUBSCRIBED) current = await deps.subscribers.setStatus(portal.call, portal.subscriberId, SubscriberStatus.ACTIVE, portal.client);
  return view(deps, portal, current);
}

/** Leaves a tag the subscriber holds (public or not: a subscriber may always leave); not held is a no-op. */
export async function unsubscribeTag(deps: PortalDeps, portal: PortalCall, tagId: string): Promise<PreferencesView> {
  await deps.budgets.charge(portal, "write");
  const [subscriber, tag] = await Promise.all([subscriberOf(deps, portal), deps.subscribers.tag(portal.call, tagId)]);
  if (!tag) throw tagNotFound();
  let current = subscriber;
  if (current.tags.includes(tag.name)) current = await deps.subscribers.removeTag(portal.call, portal.subscriberId, tag.name, portal.client);
  return view(deps, portal, current);
}

/**
 * No more marketing mail, by the subscribers service's UnsubscribeAll: the
 * one implementation the one-click link of every marketing mail uses too
 * (active becomes unsubscribed, bounced and complained keep their status
 * with the opt-out recorded, every public list is left), audited as the
 * portal's.
 */
export async function unsubscribeAll(deps: PortalDeps, portal: PortalCall): Promise<PreferencesView> {
  await deps.budgets.charge(portal, "write");
  const current = await deps.subscribers.unsubscribeAll(portal.call, portal.subscriberId, portal.client);
  if (!current) throw tokenSubjectGone();
  return view(deps, portal, current);
}

/** Erasure: the subscribers service wipes the subscriber and tells every other service (subscriber.deleted). */
export async function eraseAccount(deps: PortalDeps, portal: PortalCall): Promise<void> {
  await deps.budgets.charge(portal, "privacy");
  await subscriberOf(deps, portal);
  await deps.subscribers.erase(portal.call, portal.subscriberId, portal.client);
}

/** The language the subscriber reads (the page, and mail in their language): en, de, fr, it, or "" to unset. */
export async function setLocale(deps: PortalDeps, portal: PortalCall, locale: string): Promise<PreferencesView> {
  await deps.budgets.charge(portal, "write");
  await subscriberOf(deps, portal);
  const current = await deps.subscribers.setLocale(portal.call, portal.subscriberId, locale, portal.client);
  return view(deps, portal, current);
}
