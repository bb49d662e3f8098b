import { AppError } from "@emailsvc/errors";
import { DuplicateKeyError } from "@emailsvc/storage";
import { validateConsentWording } from "../domain/double-opt-in.js";
import { checkMetadataSize, emailKey, validateEmail, validateLocale, validateMetadata, type Metadata } from "../domain/subscriber.js";
import { tagKey, validateTagNames } from "../domain/tag.js";
import { getAudienceSettings } from "./audience-settings.js";
import { confirmationEntry, insertSubscriber } from "./create-subscriber.js";
import { withOutbox } from "@emailsvc/outbox";
import type { OutboxEntry, SubscriberDoc } from "../storage/documents.js";
import { markersOf, type Deps, type Scope } from "./deps.js";

export interface SignUpInput {
  email: unknown;
  tags: unknown[];
  metadata: Record<string, unknown> | undefined;
  locale: unknown;
  consent: { text: string; version: string; sourceId: string } | undefined;
}

/**
 * A person asks to join (a public form, the portal). A new address becomes a
 * subscriber with the public tags asked for: `pending` with a confirmation
 * deadline when the account has double opt-in on (the default), else
 * `active`; its `subscriber.created` audit record is the consent record
 * (wording, source, IP, user agent).
 *
 * An address already known changes nothing visible, whatever its status:
 * the caller is a stranger as far as we know (anyone can type anyone's
 * address into a form), so a signup may neither add tags to someone's
 * subscription nor bring back someone who unsubscribed, bounced or was
 * erased. The person joins further lists through the preference page every
 * mail links to. One exception, invisible to the caller: a `pending`
 * subscriber whose confirmation mail went out over an hour ago gets it
 * again (the person lost it and signs up anew; at most hourly, so that a
 * form cannot be used to flood someone's mailbox). Its deadline stays.
 * Nothing in the answer or its errors tells these cases apart: the same
 * reads run for every address before any branch, and the only errors are
 * about the request itself.
 */
export async function signUp(deps: Deps, scope: Scope, input: SignUpInput): Promise<void> {
  const email = validateEmail(input.email);
  const tagNames = validateTagNames(input.tags);
  const metadata = validateMetadata(input.metadata ?? {}, false) as Metadata;
  checkMetadataSize(metadata);
  const locale = validateLocale(input.locale ?? "");
  const consent = validateConsentWording(input.consent);
  const key = emailKey(email);

  const [tags, settings, existing, suppression] = await Promise.all([
    tagNames.length > 0 ? scope.tags.find({ name_key: { $in: tagNames.map(tagKey) } }) : Promise.resolve([]),
    getAudienceSettings(scope),
    scope.subscribers.findOne({ email_key: key }),
    scope.suppressions.find({ _id: { $in: markersOf(deps, scope, key) } }, { limit: 1 }),
  ]);
  // A form offers the account's public tags only; which tags exist is the account's, not the address's, business.
  const publicKeys = new Set(tags.filter((t) => t.is_public).map((t) => t.name_key));
  const notPublic = tagNames.filter((name) => !publicKeys.has(tagKey(name)));
  if (notPublic.length > 0) {
    throw new AppError("invalid", "tag_not_public", "only public tags can be signed up for", {
      fieldViolations: notPublic.map((name) => ({ field: `tags[${tagNames.indexOf(name)}]`, description: "is not a public tag of the account" })),
    });
  }
  // Known, or on the suppression list (unsubscribed, bounced, complained, added by hand, erased): nothing.
  if (existing) return resendConfirmation(deps, scope, existing, settings.confirmationTemplate);
  if (suppression.length > 0) return;

  const pending = settings.doubleOptIn;
  const byKey = new Map(tags.map((t) => [t.name_key, t]));
  try {
    const stored = await insertSubscriber(deps, scope, {
      email,
      key,
      status: pending ? "pending" : "active",
      locale,
      metadata,
      tags: tagNames.map((name) => byKey.get(tagKey(name))!),
      consent,
      confirmBy: pending ? deps.now() + settings.confirmationExpirySeconds * 1000 : undefined,
      confirmationTemplate: settings.confirmationTemplate,
      audit: {},
    });
    await deps.relay.afterWrite(stored);
  } catch (err) {
    // The same address signed up twice at once: one wins, the other is the "already known" case.
    if (err instanceof AppError && err.code === "email_taken") return;
    if (err instanceof DuplicateKeyError) return;
    throw err;
  }
}

export const CONFIRMATION_RESEND_AFTER_MS = 3_600_000;

/** A pending subscriber signed up again: their confirmation mail once more, if the last one is over an hour old. */
async function resendConfirmation(deps: Deps, scope: Scope, existing: SubscriberDoc, template: string): Promise<void> {
  if (existing.status !== "pending" || existing.deleted) return;
  const now = deps.now();
  const last = existing.confirmation_mailed_at ?? existing.created_at;
  if (now - last < (deps.confirmationResendAfterMs ?? CONFIRMATION_RESEND_AFTER_MS)) return;
  // Guarded by version and status: of two signups at once one resends; a confirmation in between wins.
  const doc = await scope.subscribers.updateOne(
    { _id: existing._id, version: existing.version, status: "pending", deleted: false },
    withOutbox<SubscriberDoc, OutboxEntry>({ $set: { confirmation_mailed_at: now } }, [confirmationEntry(scope, now, template)], now),
  );
  if (doc) await deps.relay.afterWrite(doc);
}
