import type { Status } from "./subscriber.js";
import type { SuppressionReason } from "./suppression.js";

// Who may be mailed, per category of mail: the platform's one decision of it.
// Delivery asks it for every email (by address, or a campaign's batch by ids)
// and applies the answer; nobody else decides it again. Pure.
//
// | recipient                         | marketing         | transactional   |
// |-----------------------------------|-------------------|-----------------|
// | active subscriber                 | yes               | yes             |
// | unsubscribed subscriber           | no (unsubscribed) | yes             |
// | bounced subscriber                | no (bounced)      | no (bounced)    |
// | complained subscriber             | no (complained)   | no (complained) |
// | pending subscriber (double opt-in)| no (unconfirmed)  | yes             |
// | no subscriber, address suppressed | no (suppressed)   | yes             |
// | no subscriber, not suppressed     | yes               | yes             |
//
// and the account's suppression list, for subscribers and other addresses
// alike, adds its reason to that answer (the stricter wins per category):
//
// | on the list for            | marketing         | transactional   |
// |----------------------------|-------------------|-----------------|
// | hard_bounce                | no (bounced)      | no (bounced)    |
// | complaint                  | no (complained)   | no (complained) |
// | unsubscribed               | no (unsubscribed) | yes             |
// | manual, erased             | no (suppressed)   | yes             |
//
// Why: unsubscribing is from the mailing list, not from the receipts and
// password resets the person asks for; a bounced address does not work and a
// complaint is the person calling our mail spam, so mailing either again hurts
// every sender's reputation with the mailbox providers; a pending subscriber
// has not shown yet that the address is theirs (anyone can type anyone's
// address into a form), so gets only the confirmation mail and what else they
// ask for themself (transactional), never the list; an erased address is
// kept only as a keyed hash so that no list brings the person back, which is
// about marketing too (a receipt they ask for later still reaches them).

/** Why an address may not get a category of mail. */
export type MailingBlock = "unsubscribed" | "bounced" | "complained" | "suppressed" | "unconfirmed";

/** Whether an address may be mailed, per category; undefined: it may. */
export interface Mailability {
  marketing: MailingBlock | undefined;
  transactional: MailingBlock | undefined;
}

/** The status of the subscribers marketing mail reaches: a campaign's audience holds these only. */
export const MARKETING_STATUS = "active" as const satisfies Status;

/**
 * The answer for a subscriber (by status), or for an address that is no
 * subscriber (`suppressed` after an erasure, or `unknown`).
 */
export function mailabilityOf(recipient: { status: Status } | "suppressed" | "unknown"): Mailability {
  if (recipient === "unknown") return { marketing: undefined, transactional: undefined };
  if (recipient === "suppressed") return { marketing: "suppressed", transactional: undefined };
  switch (recipient.status) {
    case "active":
      return { marketing: undefined, transactional: undefined };
    case "unsubscribed":
      return { marketing: "unsubscribed", transactional: undefined };
    case "bounced":
    case "complained":
      return { marketing: recipient.status, transactional: recipient.status };
    case "pending":
      return { marketing: "unconfirmed", transactional: undefined };
  }
}

const BLOCK_OF_REASON: Record<SuppressionReason, MailingBlock> = {
  hard_bounce: "bounced",
  complaint: "complained",
  unsubscribed: "unsubscribed",
  manual: "suppressed",
  erased: "suppressed",
};

/** The reasons that keep transactional mail away too: the address does not work, or its owner calls our mail spam. */
const BLOCKS_TRANSACTIONAL = new Set<SuppressionReason>(["hard_bounce", "complaint"]);

/** An answer with the address's entry on the suppression list (if any) added: the stricter block wins per category. */
export function withSuppression(answer: Mailability, reason: SuppressionReason | undefined): Mailability {
  if (!reason) return answer;
  const block = BLOCK_OF_REASON[reason];
  return {
    marketing: answer.marketing ?? block,
    transactional: answer.transactional ?? (BLOCKS_TRANSACTIONAL.has(reason) ? block : undefined),
  };
}
