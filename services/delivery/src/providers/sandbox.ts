import { DuplicateKeyError, type CrossTenantCollection } from "@emailsvc/storage";
import type { OutgoingMessage } from "../domain/message.js";
import type { EmailProvider, SendContext, SendResult } from "../domain/provider.js";
import type { SandboxMessageDoc } from "../storage/documents.js";
import { SANDBOX_PROVIDER } from "../domain/email.js";
import { defineProvider } from "./definition.js";

/**
 * Keeps the whole rendered message in delivery's store and sends nothing: the
 * default provider (embedded mode) and the only one test-mode keys ever use.
 * GetSandboxMessage reads it back. One message per email: a resend after a
 * crash finds the first one kept and changes nothing.
 */
export class SandboxProvider implements EmailProvider {
  readonly name = "sandbox" as const;

  constructor(
    /** Kept messages of every tenant: each goes to the tenant of the email being sent. */
    private readonly messages: CrossTenantCollection<SandboxMessageDoc>,
    private readonly now: () => number = Date.now,
  ) {}

  async send(message: OutgoingMessage, context: SendContext): Promise<SendResult> {
    try {
      await this.messages.forTenant(context.tenant).insertOne({
        _id: message.emailId,
        from: message.from.header,
        to: message.to,
        subject: message.subject,
        html: message.html,
        text: message.text,
        headers: { ...message.headers },
        captured_at: this.now(),
      });
    } catch (err) {
      if (!(err instanceof DuplicateKeyError)) throw err;
      return { response: "already kept in the sandbox" };
    }
    return { response: "kept in the sandbox" };
  }

  async close(): Promise<void> {}
}

/** In the registry: no settings; keeps messages in delivery's store. */
export const sandboxProvider = defineProvider({
  name: SANDBOX_PROVIDER,
  settings: () => ({}),
  describe: () => "kept in delivery's store, never sent",
  build: (_settings, { storage, now }) => new SandboxProvider(storage.sandboxKeeper(), now),
});
