import type { Locale } from "../domain/subscriber.js";

// What the subscribers service's use cases ask of other services; adapted in
// rpc/clients.ts.

/** One double opt-in confirmation mail to hand over. */
export interface ConfirmationMail {
  /** The subscriber's tenant key (`account:mode`). */
  tenant: string;
  email: string;
  locale: Locale;
  /** The account's template slug; "" for the platform's own. */
  template: string;
  /** The outbox entry's id: a repeated hand-over (a crash, a retry) sends nothing twice. */
  idempotencyKey: string;
}

/**
 * Sends confirmation mail through the platform's own send path (delivery's
 * SendEmail), so that it is an email like any other: recorded, rate-counted,
 * suppression-checked and delivered with retries. Resolves `sent` when
 * delivery took it, `refused` when it refused it for good (the template is
 * gone or marketing, the address may not be mailed): the subscriber then
 * stays pending until it expires. Throws when delivery could not be asked;
 * the outbox tries again.
 */
export interface ConfirmationMailer {
  send(mail: ConfirmationMail, signal?: AbortSignal): Promise<"sent" | "refused">;
}
