import { emailKey, validateEmail } from "../domain/subscriber.js";
import { mailabilityOf, type Mailability } from "../domain/mailability.js";
import { recipientView, type RecipientView } from "./audience.js";
import { isSuppressed, type Deps, type Scope } from "./deps.js";

export interface AddressAnswer {
  /** The tenant's subscriber with the address; undefined when there is none. */
  recipient: RecipientView | undefined;
  /** Theirs, or for an address that is no subscriber, whether it is suppressed. */
  mailability: Mailability;
}

/**
 * Where and how to mail one address, subscriber or not, and whether it may
 * be (AudienceService.GetRecipientByEmail, delivery's lookup per email). An
 * address erased at its owner's request has no subscriber any more, only its
 * suppression marker: that is looked up here, so it is refused marketing mail.
 */
export async function getRecipientByEmail(deps: Deps, scope: Scope, email: unknown): Promise<AddressAnswer> {
  const key = emailKey(validateEmail(email));
  const doc = await scope.subscribers.findOne({ email_key: key, deleted: false });
  if (doc) {
    const recipient = recipientView(doc);
    return { recipient, mailability: recipient.mailability };
  }
  return { recipient: undefined, mailability: mailabilityOf((await isSuppressed(deps, scope, key)) ? "suppressed" : "unknown") };
}
