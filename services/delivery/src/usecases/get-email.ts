import { AppError } from "@emailsvc/errors";
import type { EmailView } from "../domain/email.js";
import type { SandboxMessage } from "../storage/sandbox-messages.js";
import { emailView, loadEmail, type Scope } from "./deps.js";

export async function getEmail(scope: Scope, id: string): Promise<EmailView> {
  return emailView(await loadEmail(scope, id));
}

/**
 * The message the sandbox kept for this email. 404 `sandbox_message_expired`
 * for a sandboxed email whose message is no longer kept (past the retention,
 * dropped by the per-tenant cap, or erased); 404 `sandbox_message_not_found`
 * when the email was not (yet) sandboxed.
 */
export async function getSandboxMessage(scope: Scope, emailId: string): Promise<SandboxMessage> {
  const found = await scope.sandbox.get(emailId);
  if (found !== undefined && found !== "expired") return found;
  const email = found === "expired" ? undefined : await scope.emails.findOne({ _id: emailId });
  if (found === "expired" || (email?.provider === "sandbox" && email.status === "sent")) {
    throw new AppError(
      "not_found",
      "sandbox_message_expired",
      "the sandbox no longer keeps this email's message: it keeps each for SANDBOX_RETENTION_HOURS and at most SANDBOX_MAX_MESSAGES_PER_TENANT per account and mode (the oldest go first), and an erasure deletes them",
    );
  }
  throw new AppError("not_found", "sandbox_message_not_found", "no sandboxed message for this email (unknown, not sent yet, or sent through SMTP)");
}
