import { AppError } from "@emailsvc/runtime";
import type { EmailView } from "../domain/email.js";
import type { SandboxMessageDoc } from "../storage/documents.js";
import { emailView, loadEmail, type Scope } from "./deps.js";

export async function getEmail(scope: Scope, id: string): Promise<EmailView> {
  return emailView(await loadEmail(scope, id));
}

/** The message the sandbox kept for this email; 404 when the email was not (yet) sandboxed. */
export async function getSandboxMessage(scope: Scope, emailId: string): Promise<SandboxMessageDoc> {
  const message = await scope.sandbox.findOne({ _id: emailId });
  if (!message) {
    throw new AppError("not_found", "sandbox_message_not_found", "no sandboxed message for this email (unknown, not sent yet, or sent through SMTP)");
  }
  return message;
}
