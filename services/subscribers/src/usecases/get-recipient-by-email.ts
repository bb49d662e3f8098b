import { emailKey, validateEmail } from "../domain/subscriber.js";
import { mailabilityOf, withSuppression, type Mailability } from "../domain/mailability.js";
import { reasonOf } from "../domain/suppression.js";
import { recipientView, type RecipientView } from "./audience.js";
import { suppressionOf, type Deps, type Scope } from "./deps.js";

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
  const listed = entry ? reasonOf(entry) : undefined;
  if (doc) {
    const recipient = recipientView(doc);
    recipient.mailability = withSuppression(recipient.mailability, listed);
    return { recipient, mailability: recipient.mailability };
  }
  return { recipient: undefined, mailability: withSuppression(mailabilityOf("unknown"), listed) };
}
