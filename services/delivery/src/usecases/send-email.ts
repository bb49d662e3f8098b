import type { Deps, Scope } from "./deps.js";
import { sendEmails, type SendEmailInput, type SendEmailResult } from "./send-emails.js";

export type { SendEmailInput, SendEmailResult } from "./send-emails.js";

/**
 * Queues one email (SendEmail): the batch's rules (send-emails.ts) for a
 * batch of one, its refusal thrown as the error it is.
 */
export async function sendEmail(deps: Deps, scope: Scope, input: SendEmailInput & { signal?: AbortSignal }): Promise<SendEmailResult> {
  const [outcome] = await sendEmails(deps, scope, [input], input.signal);
  if (!outcome) throw new Error("SendEmail decided nothing");
  if ("error" in outcome) throw outcome.error;
  return outcome;
}
