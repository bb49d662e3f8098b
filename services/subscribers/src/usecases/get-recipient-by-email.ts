import { emailKey, validateEmail } from "../domain/subscriber.js";
import { mailabilityOf, withSuppression, type Mailability } from "../domain/mailability.js";
import { reasonOf } from "../domain/suppression.js";
import { recipientView, type RecipientView } from "./audience.js";
import { AppError, invalid } from "@emailsvc/errors";
import type { SubscriberDoc, SuppressionDoc } from "../storage/documents.js";
import { suppressionOf, suppressionsOf, type Deps, type Scope } from "./deps.js";

export interface AddressAnswer {
  /** The tenant's subscriber with the address; undefined when there is none. */
  recipient: RecipientView | undefined;
  /** Theirs (with the suppression list's entry), or for an address that is no subscriber, the list's alone. */
  mailability: Mailability;
}

/**
 * Where and how to mail one address, subscriber or not, and whether it may
 * be (AudienceService.GetRecipientByEmail, delivery's lookup per email): the
 * subscriber's status and the address's entry on the suppression list (an
 * erased address has only that entry), per domain/mailability.ts.
 */
export async function getRecipientByEmail(deps: Deps, scope: Scope, email: unknown): Promise<AddressAnswer> {
  const key = emailKey(validateEmail(email));
  const [doc, entry] = await Promise.all([scope.subscribers.findOne({ email_key: key, deleted: false }), suppressionOf(deps, scope, key)]);
  return answerOf(doc ?? undefined, entry);
}

/** Most addresses one GetRecipientsByEmail call takes. */
export const ADDRESSES_PER_CALL = 1000;

/**
 * The same answer for many addresses at once (GetRecipientsByEmail,
 * delivery's lookup for a batch of emails), in their order: one query of
 * subscribers and one of the suppression list for all. An address that
 * would not be stored is nobody's and unblocked, as delivery reads the
 * single lookup's INVALID_ARGUMENT.
 */
export async function getRecipientsByEmail(deps: Deps, scope: Scope, emails: readonly unknown[]): Promise<AddressAnswer[]> {
  if (emails.length > ADDRESSES_PER_CALL) {
    throw invalid(`at most ${ADDRESSES_PER_CALL} addresses a call`, [{ field: "emails", description: `at most ${ADDRESSES_PER_CALL}` }]);
  }
  const keys = emails.map((email) => {
    try {
      return emailKey(validateEmail(email));
    } catch (err) {
      if (err instanceof AppError) return undefined;
      throw err;
    }
  });
  const known = [...new Set(keys.filter((k): k is string => k !== undefined))];
  if (known.length === 0) return keys.map(() => answerOf(undefined, undefined));
  const [docs, entries] = await Promise.all([scope.subscribers.find({ email_key: { $in: known }, deleted: false }), suppressionsOf(deps, scope, known)]);
  const byKey = new Map(docs.map((d) => [d.email_key, d]));
  return keys.map((key) => (key === undefined ? answerOf(undefined, undefined) : answerOf(byKey.get(key), entries.get(key))));
}

function answerOf(doc: SubscriberDoc | undefined, entry: SuppressionDoc | undefined): AddressAnswer {
  const listed = entry ? reasonOf(entry) : undefined;
  if (doc) {
    const recipient = recipientView(doc);
    recipient.mailability = withSuppression(recipient.mailability, listed);
    return { recipient, mailability: recipient.mailability };
  }
  return { recipient: undefined, mailability: withSuppression(mailabilityOf("unknown"), listed) };
}
