import MailComposer from "nodemailer/lib/mail-composer";
import type { OutgoingMessage } from "../domain/message.js";
import { dkimSign } from "./dkim.js";

/**
 * The message as it leaves, whatever the provider: the whole MIME message
 * (HTML and text parts, every header of `message.headers`, the Message-ID we
 * give) built into one buffer, then DKIM-signed with the message's keys. The
 * SMTP relay gets these bytes as DATA and SES as `Content.Raw`, so both
 * providers send identical, signed bytes.
 */
export async function buildRawMessage(message: OutgoingMessage): Promise<Buffer> {
  const { From: _from, To: _to, Subject: _subject, "Message-ID": _messageId, "Reply-To": _replyTo, ...extra } = message.headers;
  // Built whole rather than streamed: streamed as nodemailer builds it, it
  // reaches an SMTP socket in a write per header line and encoded line
  // (measured: a third of the CPU of an SMTP campaign went to those writes).
  const raw = await new MailComposer({
    from: message.from.name ? { name: message.from.name, address: message.from.address } : message.from.address,
    to: message.to,
    subject: message.subject,
    ...(message.replyTo ? { replyTo: message.replyTo } : {}),
    html: message.html,
    text: message.text,
    messageId: message.messageId,
    headers: extra,
    // No tracking pixels or link rewriting: nodemailer sends what we give it.
    disableFileAccess: true,
    disableUrlAccess: true,
  })
    .compile()
    .build();
  // Signed last, over the bytes that leave: nothing rewrites the message after this.
  return message.dkim && message.dkim.length > 0 ? dkimSign(raw, message.dkim) : raw;
}
