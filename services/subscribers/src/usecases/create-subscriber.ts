import { AppError, invalid } from "@emailsvc/errors";
import { newId } from "@emailsvc/ids";
import { newOutbox } from "@emailsvc/outbox";
import { DuplicateKeyError } from "@emailsvc/storage";
import {
  checkMetadataSize,
  emailKey,
  validateEmail,
  validateLocale,
  validateMetadata,
  type Locale,
  type Metadata,
  type Status,
  type SubscriberView,
} from "../domain/subscriber.js";
import { consentData, pendingNotSettable, validateConsentWording, type ConsentWording } from "../domain/double-opt-in.js";
import { isErasureMarker, suppressed, validateResubscribe } from "../domain/suppression.js";
import { validateTagNames } from "../domain/tag.js";
import type { OutboxEntry, SubscriberDoc, TagDoc } from "../storage/documents.js";
import { getAudienceSettings } from "./audience-settings.js";
import { ensureTags, } from "./ensure-tags.js";
import { markersOf, outboxEntry, subscriberView, type Deps, type Scope } from "./deps.js";

export interface CreateSubscriberInput {
  email: unknown;
  tags: unknown[];
  metadata: Record<string, unknown> | undefined;
  status: Status | undefined;
  /** "" or absent: not set. */
  locale?: unknown;
  /** The person opted in again: lifts the suppression of an erased address (with a reason, audited). */
  resubscribe?: boolean;
  resubscribeReason?: string;
  /** What the person saw when they opted in (kept in the consent record). */
  consent?: { text: string; version: string; sourceId: string } | undefined;
  /** Create pending and mail a confirmation, whatever the account's setting for API creates. */
  doubleOptIn?: boolean;
}

export async function createSubscriber(deps: Deps, scope: Scope, input: CreateSubscriberInput): Promise<SubscriberView> {
  const email = validateEmail(input.email);
  const tagNames = validateTagNames(input.tags);
  const metadata = validateMetadata(input.metadata ?? {}, false) as Metadata;
  checkMetadataSize(metadata);
  const locale = validateLocale(input.locale ?? "");
  const resubscribe = validateResubscribe(input.resubscribe ?? false, input.resubscribeReason ?? "");
  const consent = validateConsentWording(input.consent);
  if (input.status === "pending") throw pendingNotSettable();
  if (input.doubleOptIn === true && input.status !== undefined) {
    throw invalid("double_opt_in creates a pending subscriber: leave status out", [{ field: "status", description: "leave it out with double_opt_in" }]);
  }
  const key = emailKey(email);

  // Fail early on a known duplicate, before creating tags for nothing.
  await rejectTaken(scope, key);
  // An address erased at its owner's request comes back only when the person opted in again.
  // (Entries of the suppression list with an address, a bounce say, stop mail, not the subscriber record.)
  const markers = (await scope.suppressions.find({ _id: { $in: markersOf(deps, scope, key) } })).filter(isErasureMarker).map((entry) => entry._id);
  const wasSuppressed = markers.length > 0;
  if (wasSuppressed && !resubscribe) throw suppressed();
  // Double opt-in applies to a create that asks for it, or to every create
  // when the account says so, unless the request sets the status itself (an
  // integrator recording someone as unsubscribed confirms nothing).
  const settings = await getAudienceSettings(scope);
  const confirm = input.status === undefined && (input.doubleOptIn === true || settings.doubleOptInForApi);
  const tags = await ensureTags(deps, scope, tagNames);

  const stored = await insertSubscriber(deps, scope, {
    email,
    key,
    status: confirm ? "pending" : (input.status ?? "active"),
    locale,
    metadata,
    tags,
    consent,
    confirmBy: confirm ? deps.now() + settings.confirmationExpirySeconds * 1000 : undefined,
    confirmationTemplate: settings.confirmationTemplate,
    audit: wasSuppressed && resubscribe ? { resubscribe: true, resubscribe_reason: resubscribe.reason } : {},
  });
  // The suppression goes once the subscriber it made way for exists (a failed create keeps it).
  if (wasSuppressed) await scope.suppressions.deleteMany({ _id: { $in: markers } });
  await deps.relay.afterWrite(stored);
  return subscriberView(scope, stored);
}

export interface NewSubscriber {
  email: string;
  key: string;
  status: Status;
  locale: Locale;
  metadata: Metadata;
  tags: TagDoc[];
  consent: ConsentWording | undefined;
  /** For a pending subscriber: when it expires unconfirmed, and the template of its confirmation mail ("" for the platform's). */
  confirmBy: number | undefined;
  confirmationTemplate?: string;
  /** More audit data of the creation (a resubscribe and its reason). */
  audit: Record<string, unknown>;
}

/**
 * Writes a new subscriber with its `subscriber.created` outbox entry (the
 * consent record: the audit record carries the wording and the request's
 * source, IP and user agent). The caller runs the outbox after its own
 * follow-up writes. A taken address is 409 `email_taken`.
 */
export async function insertSubscriber(deps: Deps, scope: Scope, fresh: NewSubscriber): Promise<SubscriberDoc> {
  const now = deps.now();
  const tagIds = fresh.tags.map((t) => t._id);
  const wording = consentData(fresh.consent);
  const doc: Omit<SubscriberDoc, "tenant"> = {
    _id: newId("sub"),
    email: fresh.email,
    email_key: fresh.key,
    status: fresh.status,
    locale: fresh.locale,
    metadata: fresh.metadata,
    tag_ids: tagIds,
    ...(fresh.confirmBy !== undefined ? { confirm_by: fresh.confirmBy, confirmation_mailed_at: now } : {}),
    created_at: now,
    updated_at: now,
    deleted: false,
    ...newOutbox([
      outboxEntry(scope, now, "subscriber.created", {
        status: fresh.status,
        tags: fresh.tags.map((t) => t.name),
        tag_ids: tagIds,
        ...(wording ? { consent: wording } : {}),
        ...fresh.audit,
      }, {
        topic: "subscriber.created",
        tag_ids: tagIds,
        to: fresh.status,
      }),
      // Double opt-in: the confirmation mail goes through the outbox, so that
      // a crash after the insert still sends it, once (its id is the send's
      // idempotency key).
      ...(fresh.status === "pending" ? [confirmationEntry(scope, now, fresh.confirmationTemplate ?? "")] : []),
    ]),
  };
  try {
    await scope.subscribers.insertOne(doc);
  } catch (err) {
    // Two creates of one address at once: the unique index lets exactly one win.
    if (err instanceof DuplicateKeyError) await rejectTaken(scope, fresh.key);
    throw err;
  }
  return { ...doc, tenant: scope.subscribers.tenant } as SubscriberDoc;
}

/** Throws 409 email_taken naming the subscriber that holds the address. */
export async function rejectTaken(scope: Scope, key: string, exceptId?: string): Promise<void> {
  const existing = await scope.subscribers.findOne({ email_key: key });
  if (existing && existing._id !== exceptId) {
    throw new AppError("conflict", "email_taken", "a subscriber with this email already exists", {
      existingId: existing._id,
      fieldViolations: [{ field: "email", description: "is already taken" }],
    });
  }
}

/** The outbox entry of a confirmation mail (messaging/outbox.ts hands it to delivery), audited as sent. */
export function confirmationEntry(scope: Scope, now: number, template: string): OutboxEntry {
  return { ...outboxEntry(scope, now, "subscriber.confirmation_sent", { template: template || null }, null), mail: { template } };
}
