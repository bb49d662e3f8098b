/**
 * Who the recipient is, when they are a subscriber of the sending tenant: the
 * templates' built-in `metadata.*` variables come from here (DESIGN "Email
 * pipeline"). Looked up when the message is rendered, never copied into the
 * email record, so erasing the subscriber leaves no copy of their metadata.
 */
export interface RecipientDirectory {
  /** The subscriber's metadata, or undefined when the address is no subscriber of the tenant. Throws RecipientsUnavailableError. */
  metadataOf(tenant: string, email: string, signal: AbortSignal): Promise<Record<string, unknown> | undefined>;
}

export class RecipientsUnavailableError extends Error {
  constructor() {
    super("subscribers service unavailable");
    this.name = "RecipientsUnavailableError";
  }
}
