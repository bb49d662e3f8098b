import type { Status } from "./subscriber.js";

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
// | no subscriber, address suppressed | no (suppressed)   | yes             |
// | no subscriber, not suppressed     | yes               | yes             |
//
// Why: unsubscribing is from the mailing list, not from the receipts and
// password resets the person asks for; a bounced address does not work and a
// complaint is the person calling our mail spam, so mailing either again hurts
// every sender's reputation with the mailbox providers; an erased address is
// kept only as a keyed hash so that no list brings the person back, which is
// about marketing too (a receipt they ask for later still reaches them).

/** Why an address may not get a category of mail. */
export type MailingBlock = "unsubscribed" | "bounced" | "complained" | "suppressed";

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
  }
}
