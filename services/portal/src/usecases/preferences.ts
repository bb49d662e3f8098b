import { SubscriberStatus, type Subscriber, type Tag } from "@emailsvc/proto";
import { AppError, type CallContext } from "@emailsvc/runtime";
import type { SubscriberDirectory } from "../rpc/clients.js";

// What a subscriber may do about themself, on the subscriber of a verified
// preference token. Shared by the REST API (through PreferenceCenterService)
// and the portal page, so both behave alike.

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
}

export interface PortalDeps {
  subscribers: SubscriberDirectory;
}

/** One portal request: the tenant and actor (`portal`) and the token's subscriber. */
export interface PortalCall {
  call: CallContext;
  subscriberId: string;
  /** The subscriber's client, for the audit trail (personal data: erased with the subscriber). */
  client: { ip: string; userAgent: string };
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

function view(subscriber: Subscriber, tags: Tag[]): PreferencesView {
  const held = new Set(subscriber.tags);
  // Private tags are the integrator's business (segments, imports): never shown, never changed here.
  const visible = tags.filter((t) => t.isPublic);
  return {
    subscriberId: subscriber.id,
    email: subscriber.email,
    status: subscriber.status,
    locale: subscriber.locale,
    subscribedTags: visible.filter((t) => held.has(t.name)).map(tagView),
    availableTags: visible.map(tagView),
  };
}

export async function getPreferences(deps: PortalDeps, portal: PortalCall): Promise<PreferencesView> {
  const [subscriber, tags] = await Promise.all([subscriberOf(deps, portal), deps.subscribers.tags(portal.call)]);
  return view(subscriber, tags);
}

/**
 * Joins a public tag. A subscriber who had unsubscribed from everything and
 * now joins a list has opted in again, by their own hand: active again. A
 * bounced or complained address stays as it is (that is the mail system's
 * verdict, not a preference).
 */
export async function subscribeTag(deps: PortalDeps, portal: PortalCall, tagId: string): Promise<PreferencesView> {
  const [subscriber, tag] = await Promise.all([subscriberOf(deps, portal), deps.subscribers.tag(portal.call, tagId)]);
  if (!tag || !tag.isPublic) throw tagNotFound();
  let current = subscriber;
  if (!current.tags.includes(tag.name)) current = await deps.subscribers.addTag(portal.call, portal.subscriberId, tag.name, portal.client);
  if (current.status === SubscriberStatus.UNSUBSCRIBED) current = await deps.subscribers.setStatus(portal.call, portal.subscriberId, SubscriberStatus.ACTIVE, portal.client);
  return view(current, await deps.subscribers.tags(portal.call));
}

/** Leaves a tag the subscriber holds (public or not: a subscriber may always leave); not held is a no-op. */
export async function unsubscribeTag(deps: PortalDeps, portal: PortalCall, tagId: string): Promise<PreferencesView> {
  const [subscriber, tag] = await Promise.all([subscriberOf(deps, portal), deps.subscribers.tag(portal.call, tagId)]);
  if (!tag) throw tagNotFound();
  let current = subscriber;
  if (current.tags.includes(tag.name)) current = await deps.subscribers.removeTag(portal.call, portal.subscriberId, tag.name, portal.client);
  return view(current, await deps.subscribers.tags(portal.call));
}

/**
 * No more marketing mail: unsubscribed (bounced and complained stay, they
 * receive none either), and every public list left. The status stops the
 * mail first; leaving the lists makes the page and the API say what is
 * true (no list shows as subscribed), and a list joined later brings back
 * that list alone, not every one held before. Private tags are the
 * integrator's segments and stay (the status already keeps them silent).
 */
export async function unsubscribeAll(deps: PortalDeps, portal: PortalCall): Promise<PreferencesView> {
  let current = await subscriberOf(deps, portal);
  if (current.status === SubscriberStatus.ACTIVE) current = await deps.subscribers.setStatus(portal.call, portal.subscriberId, SubscriberStatus.UNSUBSCRIBED, portal.client);
  const tags = await deps.subscribers.tags(portal.call);
  const publicNames = new Set(tags.filter((tag) => tag.isPublic).map((tag) => tag.name));
  for (const name of current.tags.filter((held) => publicNames.has(held))) {
    current = await deps.subscribers.removeTag(portal.call, portal.subscriberId, name, portal.client);
  }
  return view(current, tags);
}

/** Erasure: the subscribers service wipes the subscriber and tells every other service (subscriber.deleted). */
export async function eraseAccount(deps: PortalDeps, portal: PortalCall): Promise<void> {
  await subscriberOf(deps, portal);
  await deps.subscribers.erase(portal.call, portal.subscriberId, portal.client);
}

/** The language the subscriber reads (the page, and mail in their language): en, de, fr, it, or "" to unset. */
export async function setLocale(deps: PortalDeps, portal: PortalCall, locale: string): Promise<PreferencesView> {
  await subscriberOf(deps, portal);
  const current = await deps.subscribers.setLocale(portal.call, portal.subscriberId, locale, portal.client);
  return view(current, await deps.subscribers.tags(portal.call));
}
