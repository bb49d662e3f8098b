import type { KeyObject } from "node:crypto";
import type { HtmlParts, Rendered, TemplateCategory } from "./renderer.js";

// Building the message that leaves: headers, parts, Message-ID. Pure.

/** EMAIL_FROM when unset. */
export const DEFAULT_FROM = "Email Platform <no-reply@localhost>";

/** A sender as configured by EMAIL_FROM: `Name <addr@domain>` or `addr@domain`. */
export interface Sender {
  /** Display name, possibly empty. */
  name: string;
  address: string;
  domain: string;
  /** The header value as given (trimmed). */
  header: string;
}

const ADDRESS = /^[^\s@"<>()\[\],;:\\]+@((?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)$/i;

/** Parses EMAIL_FROM; throws with a readable message when it is not a usable sender. */
export function parseSender(raw: string): Sender {
  const value = raw.trim();
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(value)) throw new Error("EMAIL_FROM must not contain control characters or line breaks");
  const angle = /^(.*?)\s*<([^<>]+)>$/.exec(value);
  const name = angle ? angle[1]!.trim().replace(/^"(.*)"$/, "$1") : "";
  const address = angle ? angle[2]!.trim() : value;
  const match = ADDRESS.exec(address);
  if (!match) throw new Error(`EMAIL_FROM must be "Name <address@domain>" or "address@domain"`);
  return { name, address, domain: match[1]!.toLowerCase(), header: value };
}

/**
 * The Message-ID of an email: derived from its id alone, so a resend after a
 * crash carries the same one and receivers that dedupe on it drop the copy.
 */
export function messageIdFor(emailId: string, sender: Sender): string {
  return `<${emailId}@${sender.domain}>`;
}

/**
 * A key the message is DKIM-signed with (RFC 6376, relaxed/relaxed): the
 * From domain's selector and its opened private key. Providers that build the
 * raw message sign the exact bytes they send.
 */
export interface DkimSigningKey {
  domain: string;
  selector: string;
  privateKey: KeyObject;
}

/** The headers a DKIM signature covers, where the message has them (a missing one is left out of h=). */
export const DKIM_SIGNED_HEADERS = [
  "From",
  "To",
  "Subject",
  "Date",
  "Message-ID",
  "MIME-Version",
  "Content-Type",
  "Reply-To",
  "List-Unsubscribe",
  "List-Unsubscribe-Post",
  "List-Id",
  "Feedback-ID",
] as const;

/** The sender of one email: its own From (SendEmail's `from_email`/`from_name`), else the platform's EMAIL_FROM. */
export function senderFor(own: { from_email?: string | undefined; from_name?: string | undefined }, platform: Sender): Sender {
  if (!own.from_email && !own.from_name) return platform;
  const address = own.from_email || platform.address;
  const name = own.from_name ?? (own.from_email ? "" : platform.name);
  return {
    name,
    address,
    domain: address.slice(address.lastIndexOf("@") + 1).toLowerCase(),
    header: name ? `${quoteDisplayName(name)} <${address}>` : address,
  };
}

/** A display name as a header writes it: a quoted string when it holds anything but atext and spaces (RFC 5322 3.2.5). */
function quoteDisplayName(name: string): string {
  return /^[A-Za-z0-9!#$%&'*+\-/=?^_`{|}~ ]+$/.test(name) ? name : `"${name.replace(/(["\\])/g, "\\$1")}"`;
}

/**
 * Gmail's Feedback-ID (its feedback loop reports complaint rates per value):
 * `<campaign id, or the stream: transactional|marketing>:<account id>:<platform tag>`,
 * the last field the sender's constant id (FEEDBACK_ID_SENDER). Ids only.
 */
export function feedbackIdFor(input: { campaignId?: string | undefined; category: TemplateCategory; tenant: string; platformTag: string }): string {
  const accountId = input.tenant.split(":")[0] ?? "";
  return `${input.campaignId || input.category}:${accountId}:${input.platformTag}`;
}

/** What a provider sends (or the sandbox keeps): everything of the message. */
export interface OutgoingMessage {
  emailId: string;
  from: Sender;
  to: string;
  /** Reply-To, when the email has one (also in `headers`). */
  replyTo?: string | undefined;
  /** The envelope sender (MAIL FROM) when it is not the From address: the VERP return path naming this email (domain/return-path.ts). */
  returnPath?: string | undefined;
  /** The DKIM keys to sign with (the From domain's); none: sent unsigned. */
  dkim?: DkimSigningKey[] | undefined;
  subject: string;
  html: string;
  /**
   * `html` as its template version's fixed text and this message's values
   * (the renderer's, when it gives them): the MIME writer copies the fixed
   * text as it encoded it for the version's first message and writes only
   * the values (providers/mime.ts). Not posted to a sender thread, which
   * writes `html` instead (providers/threaded.ts).
   */
  htmlParts?: HtmlParts | undefined;
  text: string;
  /** `<id@domain>`, also in `headers["Message-ID"]`. */
  messageId: string;
  /** Every header we set, by canonical name; providers add Date, MIME headers and the like. */
  headers: Record<string, string>;
}

export interface MessageInput {
  emailId: string;
  from: Sender;
  to: string;
  category: TemplateCategory;
  rendered: Rendered;
  /** One-click unsubscribe URL for this recipient, when the platform knows one (bulk mail only). */
  unsubscribeUrl?: string | undefined;
  /** The tenant (`<account id>:<mode>`) whose list the mail is from: bulk mail carries its List-Id. */
  tenant?: string | undefined;
  /** The campaign the mail belongs to: a campaign's mail is bulk mail, whatever its template's category. */
  campaignId?: string | undefined;
  /** Reply-To address, when the email has one. */
  replyTo?: string | undefined;
  /** FEEDBACK_ID_SENDER: with a tenant, the message carries a Feedback-ID. */
  feedbackTag?: string | undefined;
}

/**
 * Whether a message is bulk mail (RFC 2369/2919 list mail, RFC 8058 one-click):
 * a marketing template's, and every campaign's, since a campaign mails a list
 * whatever the category of its template.
 */
export function isBulk(input: Pick<MessageInput, "category" | "campaignId">): boolean {
  return input.category === "marketing" || input.campaignId !== undefined;
}

/**
 * RFC 2919 List-Id of a tenant's bulk mail, `<acc_….live.<sender domain>>`:
 * one list per account and mode, the same for every campaign and marketing
 * send, because it names what List-Unsubscribe leaves (all of the account's
 * marketing mail in that mode), not one send. Mail clients group, filter and
 * report by it; it names no person. Which campaign a message belongs to is
 * its X-Campaign-Id.
 */
export function listIdFor(tenant: string, sender: Sender): string {
  return `<${tenant.replace(":", ".")}.${sender.domain}>`;
}

export function buildMessage(input: MessageInput): OutgoingMessage {
  // The renderer promises a subject without line breaks; a header can never
  // carry one anyway, so fold whatever is left into spaces.
  const subject = input.rendered.subject.replace(/[\r\n]+/g, " ").trim();
  const messageId = messageIdFor(input.emailId, input.from);
  const headers: Record<string, string> = {
    From: input.from.header,
    To: input.to,
    Subject: subject,
    "Message-ID": messageId,
  };
  if (isBulk(input)) {
    if (input.unsubscribeUrl) Object.assign(headers, listUnsubscribeHeaders(input.unsubscribeUrl));
    if (input.tenant) headers["List-Id"] = listIdFor(input.tenant, input.from);
  }
  if (input.replyTo) headers["Reply-To"] = input.replyTo;
  if (input.campaignId) headers["X-Campaign-Id"] = input.campaignId;
  if (input.tenant && input.feedbackTag) {
    headers["Feedback-ID"] = feedbackIdFor({ campaignId: input.campaignId, category: input.category, tenant: input.tenant, platformTag: input.feedbackTag });
  }
  return {
    emailId: input.emailId,
    from: input.from,
    to: input.to,
    ...(input.replyTo ? { replyTo: input.replyTo } : {}),
    subject,
    html: input.rendered.html,
    ...(input.rendered.htmlParts ? { htmlParts: input.rendered.htmlParts } : {}),
    text: input.rendered.text,
    messageId,
    headers,
  };
}

// What a List-Unsubscribe URL may not hold, and one-click's scheme: made once, not a RegExp object per message.
// eslint-disable-next-line no-control-regex
const NOT_IN_HEADER_URL = /[\u0000-\u0020<>\u007f]/;
const HTTPS_URL = /^https:\/\//i;

/**
 * RFC 2369 List-Unsubscribe with the RFC 8058 one-click POST marker. One-click
 * needs an HTTPS URI; any other URL gets the plain header only.
 */
export function listUnsubscribeHeaders(url: string): Record<string, string> {
  if (NOT_IN_HEADER_URL.test(url)) throw new Error("unsubscribe URL must not contain spaces, control characters or angle brackets");
  const headers: Record<string, string> = { "List-Unsubscribe": `<${url}>` };
  if (HTTPS_URL.test(url)) headers["List-Unsubscribe-Post"] = "List-Unsubscribe=One-Click";
  return headers;
}

const AT_OR_BREAK = /[@\r\n]/;
/** Printable ASCII other than a space: what trim() leaves at either end. */
const printable = (code: number) => code > 32 && code < 127;

/**
 * A provider's reason as it may be stored and shown: the server's reply text
 * without the recipient's address (or any other address), single line, bounded.
 */
export function scrubReason(reason: string, recipient: string): string {
  // The usual reply ("250 2.0.0 Ok: queued as …") names no address (the recipient's holds an "@" too): as it is.
  if (reason.length <= 500 && !AT_OR_BREAK.test(reason) && printable(reason.charCodeAt(0)) && printable(reason.charCodeAt(reason.length - 1))) return reason;
  let text = reason.replace(/[\r\n]+/g, " ").trim();
  text = text.replace(/<?[^\s<>@"]+@[^\s<>"]+>?/g, "<recipient>");
  if (recipient) text = text.split(recipient).join("<recipient>");
  return text.length > 500 ? `${text.slice(0, 497)}...` : text;
}
