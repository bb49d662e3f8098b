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
  /** `active`, `unsubscribed`, `bounced`, `complained`: marketing mail goes to active ones only. */
  status: string;
  /** The language they read (`en`, `de`, …), or undefined: their mail's `lang` when its template declares none. */
  locale?: string | undefined;
}

/** A subscriber looked up by id: a recipient and the address to mail. */
export interface AddressedRecipient extends Recipient {
  email: string;
}

/** Most ids one `byIds` call takes (AudienceService.GetRecipients). */
export const RECIPIENTS_PER_CALL = 1000;

export interface RecipientDirectory {
  /** The subscriber with this address in the tenant, or undefined when there is none. Throws RecipientsUnavailableError. */
  lookup(tenant: string, email: string, signal: AbortSignal): Promise<Recipient | undefined>;
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
