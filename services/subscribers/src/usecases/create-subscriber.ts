import { AppError } from "@emailsvc/errors";
import { newId } from "@emailsvc/ids";
import { newOutbox } from "@emailsvc/outbox";
import { DuplicateKeyError } from "@emailsvc/storage";
import {
  checkMetadataSize,
  emailKey,
  validateEmail,
  validateLocale,
  validateMetadata,
  type Metadata,
  type Status,
  type SubscriberView,
} from "../domain/subscriber.js";
import { isErasureMarker, suppressed, validateResubscribe } from "../domain/suppression.js";
import { validateTagNames } from "../domain/tag.js";
import type { SubscriberDoc } from "../storage/documents.js";
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
}

export async function createSubscriber(deps: Deps, scope: Scope, input: CreateSubscriberInput): Promise<SubscriberView> {
  const email = validateEmail(input.email);
  const tagNames = validateTagNames(input.tags);
  const metadata = validateMetadata(input.metadata ?? {}, false) as Metadata;
  checkMetadataSize(metadata);
  const locale = validateLocale(input.locale ?? "");
  const resubscribe = validateResubscribe(input.resubscribe ?? false, input.resubscribeReason ?? "");
  const key = emailKey(email);

  // Fail early on a known duplicate, before creating tags for nothing.
  await rejectTaken(scope, key);
  // An address erased at its owner's request comes back only when the person opted in again.
  // (Entries of the suppression list with an address, a bounce say, stop mail, not the subscriber record.)
  const markers = (await scope.suppressions.find({ _id: { $in: markersOf(deps, scope, key) } })).filter(isErasureMarker).map((entry) => entry._id);
  const wasSuppressed = markers.length > 0;
  if (wasSuppressed && !resubscribe) throw suppressed();
  const tags = await ensureTags(deps, scope, tagNames);

  const now = deps.now();
  const id = newId("sub");
  const status = input.status ?? "active";
  const tagIds = tags.map((t) => t._id);
  const doc: Omit<SubscriberDoc, "tenant"> = {
    _id: id,
    email,
    email_key: key,
    status,
    locale,
    metadata,
    tag_ids: tagIds,
    created_at: now,
    updated_at: now,
    deleted: false,
    ...newOutbox([
      outboxEntry(scope, now, "subscriber.created", {
        status,
        tags: tags.map((t) => t.name),
        tag_ids: tagIds,
        ...(wasSuppressed && resubscribe ? { resubscribe: true, resubscribe_reason: resubscribe.reason } : {}),
      }, {
        topic: "subscriber.created",
        tag_ids: tagIds,
        to: status,
      }),
    ]),
  };
  try {
    await scope.subscribers.insertOne(doc);
  } catch (err) {
    // Two creates of one address at once: the unique index lets exactly one win.
    if (err instanceof DuplicateKeyError) await rejectTaken(scope, key);
    throw err;
  }
  // The suppression goes once the subscriber it made way for exists (a failed create keeps it).
  if (wasSuppressed) await scope.suppressions.deleteMany({ _id: { $in: markers } });
  const stored = { ...doc, tenant: scope.subscribers.tenant } as SubscriberDoc;
  await deps.relay.afterWrite(stored);
  return subscriberView(scope, stored);
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
