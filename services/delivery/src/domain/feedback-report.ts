// What comes back to a return path, read: a delivery status notification
// (RFC 3464, `multipart/report; report-type=delivery-status`) or a complaint
// (ARF, RFC 5965, `report-type=feedback-report`). Only the report's fields
// are read, never the returned message's body: what an email's status and
// its subscriber need is which recipient, what happened (the action and the
// status code) and the remote server's words. Whether that is a hard or a
// soft bounce is not decided here but by the same rule as the relay's answers
// at send time, from `status` and `diagnosticCode`.

/** RFC 3464 §2.3.3. */
export type DsnAction = "failed" | "delayed" | "delivered" | "relayed" | "expanded";

export interface DsnRecipient {
  /** Final-Recipient's address (lower case), when it is an rfc822 address. */
  recipient: string | undefined;
  action: DsnAction;
  /** The enhanced status code (RFC 3463), e.g. `5.1.1`. */
  status: string;
  /** The remote server's reply code in Diagnostic-Code (`smtp; 550 …`), e.g. 550; undefined when it gave none. */
  diagnosticCode: number | undefined;
  /** Diagnostic-Code's text as the remote server said it (at most 500 characters), e.g. `550 5.1.1 user unknown`. */
  diagnostic: string | undefined;
}

export type FeedbackReport =
  | { kind: "delivery_status"; recipients: DsnRecipient[] }
  | {
      kind: "complaint";
      /** Feedback-Type: `abuse`, `fraud`, `not-spam`, … (lower case). */
      feedbackType: string;
      /** Original-Rcpt-To (lower case), when the reporter kept it. */
      originalRecipient: string | undefined;
      /** Original-Mail-From: the return path the complaint is about, when the reporter kept it. */
      originalMailFrom: string | undefined;
    }
  | { kind: "unrecognised"; reason: string };

const ACTIONS = new Set<DsnAction>(["failed", "delayed", "delivered", "relayed", "expanded"]);
const MAX_DIAGNOSTIC = 500;

/**
 * Header-like field groups separated by blank lines (the body of
 * message/delivery-status and message/feedback-report), names in lower case,
 * folded lines unfolded.
 */
export function fieldGroups(text: string): Array<Map<string, string>> {
  const groups: Array<Map<string, string>> = [];
  let current = new Map<string, string>();
  let last: string | undefined;
  for (const line of text.replace(/\r\n/g, "\n").split("\n")) {
    if (line.trim() === "") {
      if (current.size > 0) groups.push(current);
      current = new Map();
      last = undefined;
      continue;
    }
    if (/^[ \t]/.test(line) && last !== undefined) {
      current.set(last, `${current.get(last)} ${line.trim()}`);
      continue;
    }
    const colon = line.indexOf(":");
    if (colon <= 0) continue;
    last = line.slice(0, colon).trim().toLowerCase();
    // The first of a repeated field counts (a report has each once; a second is noise).
    if (!current.has(last)) current.set(last, line.slice(colon + 1).trim());
  }
  if (current.size > 0) groups.push(current);
  return groups;
}

/** `rfc822; a@b` → `a@b` (lower case); undefined for another address type. */
function rfc822Address(value: string | undefined): string | undefined {
  if (!value) return undefined;
  const semicolon = value.indexOf(";");
  const type = semicolon < 0 ? "rfc822" : value.slice(0, semicolon).trim().toLowerCase();
  if (type !== "rfc822") return undefined;
  const address = (semicolon < 0 ? value : value.slice(semicolon + 1)).trim().replace(/^<|>$/g, "").toLowerCase();
  return address.includes("@") ? address : undefined;
}

function dsnRecipient(group: Map<string, string>): DsnRecipient | undefined {
  const action = group.get("action")?.toLowerCase().split(/\s/)[0] as DsnAction | undefined;
  const status = /^([245])\.\d{1,3}\.\d{1,3}/.exec(group.get("status") ?? "")?.[0];
  if (!action || !ACTIONS.has(action) || !status) return undefined;
  const diagnosticField = group.get("diagnostic-code");
  const diagnostic = diagnosticField?.includes(";") ? diagnosticField.slice(diagnosticField.indexOf(";") + 1).trim() : diagnosticField?.trim();
  const code = /^([2-5]\d\d)\b/.exec(diagnostic ?? "")?.[1];
  return {
    recipient: rfc822Address(group.get("final-recipient") ?? group.get("original-recipient")),
    action,
    status,
    diagnosticCode: code ? Number(code) : undefined,
    diagnostic: diagnostic ? diagnostic.slice(0, MAX_DIAGNOSTIC) : undefined,
  };
}

/** A Content-Type value: its media type (lower case) and parameters (names lower case, quotes removed). */
function contentTypeOf(value: string | undefined): { type: string; params: Map<string, string> } {
  const [type = "", ...rest] = (value ?? "text/plain").split(";");
  const params = new Map<string, string>();
  for (const param of rest) {
    const eq = param.indexOf("=");
    if (eq <= 0) continue;
    params.set(param.slice(0, eq).trim().toLowerCase(), param.slice(eq + 1).trim().replace(/^"(.*)"$/, "$1"));
  }
  return { type: type.trim().toLowerCase(), params };
}

/** Headers and body of a message or MIME part (split at the first blank line). */
function splitEntity(text: string): { headers: Map<string, string>; body: string } {
  const match = /\r?\n\r?\n/.exec(text);
  const head = match ? text.slice(0, match.index) : text;
  const body = match ? text.slice(match.index + match[0].length) : "";
  return { headers: fieldGroups(head)[0] ?? new Map(), body };
}

function decodeBody(body: string, encoding: string | undefined): string {
  switch (encoding?.trim().toLowerCase()) {
    case "base64":
      return Buffer.from(body.replace(/\s+/g, ""), "base64").toString("utf8");
    case "quoted-printable":
      return body.replace(/=\r?\n/g, "").replace(/=([0-9A-Fa-f]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
    default:
      return body;
  }
}

/**
 * The direct parts of a multipart/report (RFC 6522: the report's own part is
 * always one of them, never nested), by media type, bodies decoded. A
 * message/delivery-status part is read here rather than by a general MIME
 * parser: mailparser, for one, folds it into the text body.
 */
function reportParts(body: string, boundary: string): Array<{ type: string; body: string }> {
  const delimiter = `--${boundary}`;
  const parts: Array<{ type: string; body: string }> = [];
  const chunks = body.split(new RegExp(`(?:^|\\r?\\n)${delimiter.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`));
  // The first chunk is the preamble; one starting with "--" is the end.
  for (const chunk of chunks.slice(1)) {
    if (chunk.startsWith("--")) break;
    const { headers, body: partBody } = splitEntity(chunk.replace(/^[ \t]*\r?\n/, ""));
    parts.push({ type: contentTypeOf(headers.get("content-type")).type, body: decodeBody(partBody, headers.get("content-transfer-encoding")) });
  }
  return parts;
}

/** The largest report read: a DSN or ARF report is a few kilobytes beside the message it returns, of which only the headers matter. */
export const MAX_REPORT_BYTES = 1024 * 1024;

/** Reads a message that arrived at a return path or a feedback address. */
export function readFeedbackReport(raw: Buffer | string): FeedbackReport {
  const text = (typeof raw === "string" ? raw : raw.toString("utf8")).slice(0, MAX_REPORT_BYTES);
  const { headers, body } = splitEntity(text);
  const contentType = contentTypeOf(headers.get("content-type"));
  if (contentType.type !== "multipart/report") return { kind: "unrecognised", reason: "not a multipart/report" };
  const boundary = contentType.params.get("boundary");
  if (!boundary) return { kind: "unrecognised", reason: "a multipart/report without a boundary" };
  const parts = reportParts(body, boundary);
  const reportType = contentType.params.get("report-type")?.toLowerCase();
  if (reportType === "delivery-status") {
    const part = parts.find((p) => p.type === "message/delivery-status" || p.type === "message/global-delivery-status");
    if (!part) return { kind: "unrecognised", reason: "a delivery-status report without its message/delivery-status part" };
    // The first group is about the message, each later one about a recipient (RFC 3464 §2.1).
    const recipients = fieldGroups(part.body)
      .slice(1)
      .map(dsnRecipient)
      .filter((r): r is DsnRecipient => r !== undefined);
    if (recipients.length === 0) return { kind: "unrecognised", reason: "a delivery-status report naming no recipient with an action and a status" };
    return { kind: "delivery_status", recipients };
  }
  if (reportType === "feedback-report") {
    const part = parts.find((p) => p.type === "message/feedback-report");
    if (!part) return { kind: "unrecognised", reason: "a feedback report without its message/feedback-report part" };
    const fields = fieldGroups(part.body)[0] ?? new Map<string, string>();
    const feedbackType = fields.get("feedback-type")?.toLowerCase();
    if (!feedbackType) return { kind: "unrecognised", reason: "a feedback report without Feedback-Type" };
    const mailFrom = fields.get("original-mail-from")?.trim().replace(/^<|>$/g, "");
    return {
      kind: "complaint",
      feedbackType,
      originalRecipient: rfc822Address(fields.get("original-rcpt-to")),
      originalMailFrom: mailFrom ? mailFrom.toLowerCase() : undefined,
    };
  }
  return { kind: "unrecognised", reason: `a report of type ${reportType ?? "(none)"}` };
}

/**
 * Whether feedback of this type is a complaint about our mail (the ARF
 * Feedback-Type, SES's complaintFeedbackType; absent: SES sends complaints
 * without one). `not-spam` takes a mark back and `auth-failure` reports a
 * forgery: neither is the recipient calling the mail spam.
 */
export function isComplaint(feedbackType: string | undefined): boolean {
  return feedbackType !== "not-spam" && feedbackType !== "auth-failure";
}
