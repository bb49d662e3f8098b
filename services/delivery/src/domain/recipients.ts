/**
 * Who the recipient is, when they are a subscriber of the sending tenant: the
 * templates' built-in `metadata.*` variables come from here (DESIGN "Email
 * pipeline"), and the subscriber id links the email record to the subscriber
 * so that `subscriber.deleted` can erase it. The metadata is looked up when the
 * message is rendered, never copied into the email record; only the id is kept.
 */
export interface Recipient {
  subscriberId: string;
  metadata: Record<string, unknown>;
  /** Whether they may be mailed, per category: the subscribers service's answer. */
  mailability: Mailability;
  /** The language they read (`en`, `de`, …), or undefined: their mail's `lang` when its template declares none. */
  locale?: string | undefined;
}

/** A subscriber looked up by id: a recipient and the address to mail. */
export interface AddressedRecipient extends Recipient {
  email: string;
}

/** Why an address may not get a category of mail (the subscribers service's vocabulary). */
export type MailingBlock = "unsubscribed" | "bounced" | "complained" | "suppressed";

/**
 * Whether an address may be mailed, per category; undefined: it may. Decided
 * by the subscribers service (it keeps subscribers and the suppression list);
 * delivery applies it (domain/eligibility.ts) and never decides it again.
 */
export interface Mailability {
  marketing: MailingBlock | undefined;
  transactional: MailingBlock | undefined;
}

/** What the subscribers service says about one address. */
export interface AddressAnswer {
  /** The tenant's subscriber with the address; undefined when there is none. */
  recipient: Recipient | undefined;
  /** Theirs; for an address that is no subscriber, whether it is suppressed (erased at its owner's request). */
  mailability: Mailability;
}

/** Most addresses one AudienceService.GetRecipientsByEmail call takes. */
export const ADDRESSES_PER_CALL = 1000;

/** Most ids one `byIds` call takes (AudienceService.GetRecipients). */
export const RECIPIENTS_PER_CALL = 1000;

export interface RecipientDirectory {
  /**
   * The address as the subscribers service knows it: its subscriber (if any)
   * and whether it may be mailed. Throws RecipientsUnavailableError.
   */
  lookup(tenant: string, email: string, signal: AbortSignal): Promise<AddressAnswer>;
  /**
   * The same for many addresses (a batch of emails), by the address as
   * given: one call per ADDRESSES_PER_CALL. Throws RecipientsUnavailableError.
   */
  lookupMany(tenant: string, emails: readonly string[], signal: AbortSignal): Promise<Map<string, AddressAnswer>>;
  /**
   * The tenant's subscribers with these ids (at most RECIPIENTS_PER_CALL), by
   * id; an id of no subscriber (erased) is absent. A campaign's recipients
   * are looked up this way, a batch in one call. Throws RecipientsUnavailableError.
   */
  byIds(tenant: string, ids: readonly string[], signal: AbortSignal): Promise<Map<string, AddressedRecipient>>;
}

export class RecipientsUnavailableError extends Error {
  constructor() {
    super("subscribers service unavailable");
    this.name = "RecipientsUnavailableError";
  }
}

/** What an email taught about its address: a hard or a soft bounce (retries ran out), or a complaint. */
export type DeliveryProblem = "hard_bounce" | "soft_bounce" | "complaint";

/**
 * Where bounces and complaints go: the subscribers service, which keeps the
 * suppression list and moves the address's subscriber (SuppressionService.
 * RecordDeliveryProblem, idempotent per email). Throws when it cannot be told.
 */
export interface DeliveryProblemSink {
  record(tenant: string, report: { email: string; problem: DeliveryProblem; emailId: string }): Promise<void>;
}
