import type { OutgoingMessage } from "../domain/message.js";
import type { EmailProvider, SendContext, SendResult } from "../domain/provider.js";
import { SANDBOX_PROVIDER } from "../domain/email.js";
import type { SandboxArchive } from "../storage/sandbox-messages.js";
import { defineProvider } from "./definition.js";

/**
 * Keeps the whole rendered message and sends nothing: the default provider
 * (embedded mode) and the only one test-mode keys ever use.
 * GetSandboxMessage reads it back. One message per email: a resend after a
 * crash finds the first one kept and changes nothing. What is kept, where,
 * and for how long (retention, a cap per tenant, bodies off the heap):
 * storage/sandbox-messages.ts, whose retention sweep runs while the provider
 * is open.
 */
export class SandboxProvider implements EmailProvider {
  readonly name = "sandbox" as const;

  constructor(
    /** Kept messages of every tenant: each goes to the tenant of the email being sent. */
    private readonly messages: SandboxArchive,
    private readonly now: () => number = Date.now,
  ) {
    messages.start();
  }

  async send(message: OutgoingMessage, context: SendContext): Promise<SendResult> {
    const kept = await this.messages.keep(context.tenant, {
      emailId: message.emailId,
      from: message.from.header,
      to: message.to,
      subject: message.subject,
      html: message.html,
      text: message.text,
      headers: { ...message.headers },
      capturedAt: this.now(),
    });
    return { response: kept ? "kept in the sandbox" : "already kept in the sandbox" };
  }

  async close(): Promise<void> {
    await this.messages.stop();
  }
}

/** In the registry: no settings; keeps messages in delivery's store. */
export const sandboxProvider = defineProvider({
  name: SANDBOX_PROVIDER,
  settings: () => ({}),
  describe: () => "kept in delivery's store, never sent",
  build: (_settings, { storage, now }) => new SandboxProvider(storage.sandboxKeeper(), now),
});
