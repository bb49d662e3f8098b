import { pendingNotSettable } from "../domain/double-opt-in.js";
import { withOutbox } from "@emailsvc/outbox";
import { DuplicateKeyError } from "@emailsvc/storage";
import { notFound } from "@emailsvc/errors";
import {
  emailKey,
  mergeMetadata,
  validateEmail,
  validateLocale,
  validateMetadata,
  type Status,
  type SubscriberView,
} from "../domain/subscriber.js";
import type { OutboxEntry, SubscriberDoc } from "../storage/documents.js";
import { rejectTaken } from "./create-subscriber.js";
import { suppressed } from "../domain/suppression.js";
import { isSuppressed, loadSubscriber, outboxEntry, subscriberView, type Deps, type Scope } from "./deps.js";

export interface UpdateSubscriberInput {
  id: string;
  email: unknown;
  status: Status | undefined;
  metadata: Record<string, unknown> | undefined;
  /** Absent: unchanged; "" unsets it. */
  locale?: unknown;
}

/**
 * The status a change to `asked` leads to. A bounced or complained subscriber
 * who unsubscribed from everything meanwhile (opted_out_at, unsubscribe-all.ts)
 * and is set active (the bounce cleared, say) becomes unsubscribed: lifting
 * the mail system's verdict does not undo the person's own choice. Set active
 * again once they opted in again. A hop between the verdicts (bounced to
 * complained) keeps the opt-out for the next change (see below).
 */
function statusAfter(current: SubscriberDoc, asked: Status): Status {
  if (asked === "active" && current.opted_out_at != null && (current.status === "bounced" || current.status === "complained")) return "unsubscribed";
  return asked;
}

export async function updateSubscriber(deps: Deps, scope: Scope, input: UpdateSubscriberInput): Promise<SubscriberView> {
  const email = input.email === undefined ? undefined : validateEmail(input.email);
  const patch = input.metadata === undefined ? undefined : validateMetadata(input.metadata, true);
  const locale = input.locale === undefined ? undefined : validateLocale(input.locale);
  // `pending` comes from double opt-in only: a subscriber is never put back to "not confirmed".
  if (input.status === "pending") throw pendingNotSettable();
  const current = await loadSubscriber(scope, input.id);

  const now = deps.now();
  const set: Partial<Pick<SubscriberDoc, "email" | "email_key" | "metadata" | "status" | "locale" | "opted_out_at" | "confirm_by">> = {};
  const entries: OutboxEntry[] = [];
  const changed: string[] = [];
  if (email !== undefined && email !== current.email) {
    if (emailKey(email) !== current.email_key) {
      await rejectTaken(scope, emailKey(email), current._id);
      // An erased address comes back only by a create that says the person opted in again.
      if (await isSuppressed(deps, scope, emailKey(email))) throw suppressed();
    }
    set.email = email;
    set.email_key = emailKey(email);
    changed.push("email");
  }
  if (patch !== undefined) {
    const merged = mergeMetadata(current.metadata, patch);
    if (JSON.stringify(merged) !== JSON.stringify(current.metadata)) {
      set.metadata = merged;
      changed.push("metadata");
    }
  }
  if (locale !== undefined && locale !== (current.locale ?? "")) {
    set.locale = locale;
    changed.push("locale");
  }
  if (changed.length > 0) {
    // Names the fields only: the audit trail holds no address or metadata values.
    entries.push(outboxEntry(scope, now, "subscriber.updated", { fields: changed }, null));
  }
  const status = input.status === undefined ? undefined : statusAfter(current, input.status);
  if (status !== undefined && status !== current.status) {
    set.status = status;
    // The opt-out kept beside bounced/complained is cleared only once the
    // status says it (unsubscribed, asked or led to by statusAfter). Any other
    // hop (bounced to complained) keeps it: cleared there, a later change to
    // active would resume marketing the person had opted out of.
    if (current.opted_out_at != null && status === "unsubscribed") set.opted_out_at = null;
    // A pending subscriber moved on by the integrator no longer expires.
    if (current.confirm_by != null) set.confirm_by = null;
    const asked = status !== input.status ? { asked: input.status, reason: "opted_out" } : {};
    entries.push(
      outboxEntry(scope, now, "subscriber.status_changed", { from: current.status, to: status, ...asked }, {
        topic: "subscriber.status_changed",
        from: current.status,
        to: status,
      }),
    );
  }
  if (entries.length === 0) return subscriberView(scope, current);

  // Guarded by the version read above: a concurrent change makes this update
  // miss, and the caller gets a fresh read rather than a lost update.
  const update = withOutbox<SubscriberDoc, OutboxEntry>({ $set: set }, entries, now);
  let doc;
  try {
    doc = await scope.subscribers.updateOne({ _id: current._id, version: current.version, deleted: false }, update);
  } catch (err) {
    if (err instanceof DuplicateKeyError && set.email_key) await rejectTaken(scope, set.email_key, current._id);
    throw err;
  }
  if (!doc) {
    const again = await scope.subscribers.findOne({ _id: current._id, deleted: false });
    if (!again) throw notFound("subscriber");
    return updateSubscriber(deps, scope, input); // retry on the newer version
  }
  await deps.relay.afterWrite(doc);
  return subscriberView(scope, doc);
}
