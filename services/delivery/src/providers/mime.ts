import { createHash } from "node:crypto";
import type { OutgoingMessage } from "../domain/message.js";
import { dkimSign } from "./dkim.js";
import type { HtmlParts } from "../domain/renderer.js";
import { headerLine, mailbox, quotedPrintableBound, rfc5322Date, writeQuotedPrintable, writeSevenBit, writeSevenBitParts } from "./mime-encoding.js";

// The message as it leaves, whatever the provider: the whole MIME message
// (HTML and text parts, every header of `message.headers`, the Message-ID we
// give) in one buffer, DKIM-signed with the message's keys. The SMTP relay
// gets these bytes as DATA and SES as `Content.Raw`, so both providers send
// identical, signed bytes.
//
// A campaign sends one template version from one sender to many recipients:
// what they share (From, Reply-To, List-Id, the campaign's headers, the MIME
// skeleton with its boundary and part headers) is written once into a
// skeleton, cached by those values; per message only To, Subject,
// Message-ID, Date, List-Unsubscribe and the two rendered bodies are written.
//
// A part that is ASCII with lines of at most 998 octets (a rendered MJML
// newsletter is) goes as `7bit`: copied, its line ends made CRLF, not
// encoded. Anything else goes in quoted-printable. An HTML part the renderer
// gives as its version's fixed text and this message's values (HtmlParts)
// is written from those: the fixed text checked and made CRLF once per
// version, only the values per message (writeSevenBitParts), and the
// rendered string is never read (nor flattened: Handlebars builds it of
// hundreds of pieces).

/** Headers every message of a skeleton shares, by the name they are written with. */
const SHARED_HEADERS = ["Reply-To", "List-Id", "List-Unsubscribe-Post", "X-Campaign-Id", "Feedback-ID"] as const;
/** Headers written per message (or by the writer itself); any other header of `message.headers` is shared. */
const OWN_HEADERS = new Set(["From", "To", "Subject", "Message-ID", "Date", "List-Unsubscribe", "MIME-Version", "Content-Type", "Content-Transfer-Encoding"]);

/** A part's opening written once for each transfer encoding it may go in. */
interface ByEncoding {
  sevenBit: Buffer;
  quotedPrintable: Buffer;
}

/** What a group of messages shares, written once. */
interface Skeleton {
  /** From and the shared headers, each line with its CRLF. */
  shared: string;
  /** The multipart boundary (a 7bit part must not contain it). */
  boundary: string;
  /** `MIME-Version`, the top Content-Type and the blank line, by the parts the message has. */
  top: { both: string; html: string; text: string };
  /** Between the header block and the text part (with its headers), between the parts (with the HTML part's headers), and after the HTML part. */
  openText: ByEncoding;
  between: ByEncoding;
  close: Buffer;
  /** The single part's headers when only one of HTML and text is given. */
  onlyHtml: ByEncoding;
  onlyText: ByEncoding;
  /**
   * Body lines already encoded, by their text: the lines of the first
   * messages written with this skeleton (a campaign's template: its static
   * lines recur in every message), up to LINES_BUDGET bytes.
   */
  lines: Map<string, Buffer>;
  linesBytes: number;
}

/** Bytes of encoded lines a skeleton keeps: a newsletter's two bodies, about. */
const LINES_BUDGET = 32 * 1024;
/** Shorter lines are encoded each time: a lookup would cost about as much. */
const CACHED_LINE_MIN = 24;

const PART_HEADERS = (type: string, encoding: string) => `Content-Type: text/${type}; charset=utf-8\r\nContent-Transfer-Encoding: ${encoding}\r\n\r\n`;

/** `before` then the part headers of `type`, in each encoding. */
function opening(before: string, type: string): ByEncoding {
  return {
    sevenBit: Buffer.from(before + PART_HEADERS(type, "7bit"), "latin1"),
    quotedPrintable: Buffer.from(before + PART_HEADERS(type, "quoted-printable"), "latin1"),
  };
}

function compileSkeleton(shared: string): Skeleton {
  // "=_" cannot occur in quoted-printable text (an "=" there is always followed
  // by two hex digits or a line end), so the boundary needs checking only
  // against a 7bit part (writeSevenBit); the digest makes it stable for one skeleton.
  const boundary = `=_${createHash("sha256").update(shared).digest("base64url").slice(0, 24)}`;
  const multipart = `MIME-Version: 1.0\r\nContent-Type: multipart/alternative; boundary="${boundary}"\r\n\r\n`;
  return {
    shared,
    boundary,
    top: { both: multipart, html: "MIME-Version: 1.0\r\n", text: "MIME-Version: 1.0\r\n" },
    openText: opening(`--${boundary}\r\n`, "plain"),
    between: opening(`\r\n--${boundary}\r\n`, "html"),
    close: Buffer.from(`\r\n--${boundary}--\r\n`, "latin1"),
    onlyHtml: opening("", "html"),
    onlyText: opening("", "plain"),
    lines: new Map(),
    linesBytes: 0,
  };
}

/** Skeletons by what they share; a campaign uses one, a busy platform a few hundred (at most 200 kept: with their lines, under 7 MB). */
const skeletons = new Map<string, Skeleton>();
const SKELETON_CAPACITY = 200;

/**
 * The last skeleton used and what it was made of: From and every shared
 * header in the order the message had them. A campaign's messages all match
 * it, which is checked by comparing those values, without writing the shared
 * headers again for the lookup (about 1.5 KB of strings a message). Its
 * place in `skeletons`' order is not renewed by such a match.
 */
let last: { skeleton: Skeleton; fromName: string; fromAddress: string; headers: string[] } | undefined;

/** Whether `message` has the last skeleton's From and shared headers, in the same order (else it is looked up as usual). */
function matchesLast(message: OutgoingMessage, made: NonNullable<typeof last>): boolean {
  if (message.from.name !== made.fromName || message.from.address !== made.fromAddress) return false;
  let at = 0;
  for (const name in message.headers) {
    if (OWN_HEADERS.has(name)) continue;
    if (made.headers[at] !== name || made.headers[at + 1] !== message.headers[name]) return false;
    at += 2;
  }
  return at === made.headers.length;
}

function skeletonFor(message: OutgoingMessage): Skeleton {
  // Used even when evicted from `skeletons` meanwhile: it is what the message shares either way.
  if (last && matchesLast(message, last)) return last.skeleton;
  const skeleton = lookUpSkeleton(message);
  const headers: string[] = [];
  for (const name in message.headers) if (!OWN_HEADERS.has(name)) headers.push(name, message.headers[name]!);
  last = { skeleton, fromName: message.from.name, fromAddress: message.from.address, headers };
  return skeleton;
}

function lookUpSkeleton(message: OutgoingMessage): Skeleton {
  let shared = `From: ${mailbox(message.from.name, message.from.address)}\r\n`;
  for (const name of SHARED_HEADERS) {
    const value = message.headers[name];
    if (value !== undefined) shared += headerLine(name, value);
  }
  for (const [name, value] of Object.entries(message.headers)) {
    if (!OWN_HEADERS.has(name) && !(SHARED_HEADERS as readonly string[]).includes(name)) shared += headerLine(name, value);
  }
  let skeleton = skeletons.get(shared);
  if (skeleton) {
    // Most recently used last: the first key is the one to evict.
    skeletons.delete(shared);
    skeletons.set(shared, skeleton);
    return skeleton;
  }
  skeleton = compileSkeleton(shared);
  skeletons.set(shared, skeleton);
  if (skeletons.size > SKELETON_CAPACITY) skeletons.delete(skeletons.keys().next().value!);
  return skeleton;
}

/** The unsigned message: header block and body, and where the body starts (DKIM hashes it apart). */
export interface UnsignedMessage {
  raw: Buffer;
  bodyStart: number;
  /**
   * True when no line of the message starts with "." (every part went 7bit
   * and none of their lines does; header lines never do), so that SMTP need
   * not look for lines to dot-stuff; false when not known.
   */
  noDotLines: boolean;
}

/** Whether a 7bit part written since it was reset had a line starting with "." (writeSevenBit sets it). */
const written = { dotted: false };
/** Whether every part written since `written` was reset went 7bit. */
let allSevenBit = true;

/**
 * The message's bytes without a signature. Header order: From, the shared
 * headers, To, Subject, Message-ID, Date, List-Unsubscribe, MIME headers.
 * Both parts UTF-8 in a multipart/alternative, each 7bit when it can be and
 * quoted-printable otherwise; only the one given when the other is empty (an
 * empty text part is not sent).
 */
export function writeMessage(message: OutgoingMessage, now: number = Date.now()): UnsignedMessage {
  const skeleton = skeletonFor(message);
  written.dotted = false;
  allSevenBit = true;
  let head = skeleton.shared;
  head += `To: ${lowerDomain(message.to)}\r\n`;
  head += headerLine("Subject", message.subject);
  head += `Message-ID: ${message.messageId}\r\n`;
  head += `Date: ${rfc5322Date(now)}\r\n`;
  const unsubscribe = message.headers["List-Unsubscribe"];
  if (unsubscribe !== undefined) head += `List-Unsubscribe: ${unsubscribe}\r\n`;
  const both = message.text !== "" && message.html !== "";
  head += both ? skeleton.top.both : message.text ? skeleton.top.text : skeleton.top.html;
  // Written in place into the slab, with room for the most it can take; the message is the view of what it took.
  const out = slabWithRoom(head.length * 3 + quotedPrintableBound(message.text) + quotedPrintableBound(message.html) + 1024);
  const start = slabUsed;
  let at = start + out.write(head, start, "utf8");
  let bodyStart = at;
  if (both) {
    at = writePart(message.text, undefined, skeleton.openText, out, at, skeleton);
    at = writePart(message.html, message.htmlParts, skeleton.between, out, at, skeleton);
    at += skeleton.close.copy(out, at);
  } else {
    // A single part's headers are part of the header block: the body is its content alone.
    const opened = message.text ? skeleton.onlyText : skeleton.onlyHtml;
    const content = message.text || message.html;
    const sevenBit = sevenBitOf(content, message.text ? undefined : message.htmlParts, out, at + opened.sevenBit.length, skeleton.boundary);
    if (sevenBit >= 0) {
      opened.sevenBit.copy(out, at);
      bodyStart = at + opened.sevenBit.length;
      at = sevenBit;
    } else {
      allSevenBit = false;
      at += opened.quotedPrintable.copy(out, at);
      bodyStart = at;
      at = writeBody(content, out, at, skeleton);
    }
  }
  // Never written again: the next message starts past it (8-byte aligned), or in a new slab.
  slabUsed = (at + 7) & ~7;
  return { raw: out.subarray(start, at), bodyStart: bodyStart - start, noDotLines: allSevenBit && !written.dotted };
}

/**
 * A part (its opening, then its content) at `start`: 7bit when the content
 * may go as it is, else quoted-printable. Returns where it ended.
 */
function writePart(content: string, parts: HtmlParts | undefined, opened: ByEncoding, out: Buffer, start: number, skeleton: Skeleton): number {
  const sevenBit = sevenBitOf(content, parts, out, start + opened.sevenBit.length, skeleton.boundary);
  if (sevenBit >= 0) {
    opened.sevenBit.copy(out, start);
    return sevenBit;
  }
  allSevenBit = false;
  return writeBody(content, out, start + opened.quotedPrintable.copy(out, start), skeleton);
}

/** `content` as 7bit at `start` (from its parts when given and they tell), or -1 (see writeSevenBit). */
function sevenBitOf(content: string, parts: HtmlParts | undefined, out: Buffer, start: number, boundary: string): number {
  if (parts) {
    const end = writeSevenBitParts(parts.statics, parts.values, out, start, boundary, written);
    if (end >= 0) return end;
  }
  return writeSevenBit(content, out, start, boundary, written);
}

/**
 * A body in quoted-printable, line by line: a line the skeleton has encoded
 * before is copied, any other encoded (and kept while the budget lasts).
 * Quoted-printable restarts at every line break, so this is byte for byte
 * writeQuotedPrintable of the whole text (a test compares them).
 */
function writeBody(text: string, out: Buffer, start: number, skeleton: Skeleton): number {
  let at = start;
  let from = 0;
  const length = text.length;
  for (;;) {
    let end = text.indexOf("\n", from);
    const last = end < 0;
    if (last) end = length;
    const lineEnd = !last && end > from && text.charCodeAt(end - 1) === 13 ? end - 1 : end;
    if (lineEnd - from < CACHED_LINE_MIN) at = writeQuotedPrintable(text.slice(from, lineEnd), out, at);
    else {
      const line = text.slice(from, lineEnd);
      const encoded = skeleton.lines.get(line);
      if (encoded) at += encoded.copy(out, at);
      else {
        const lineStart = at;
        at = writeQuotedPrintable(line, out, at);
        if (skeleton.linesBytes < LINES_BUDGET) {
          skeleton.lines.set(line, Buffer.from(out.subarray(lineStart, at)));
          skeleton.linesBytes += at - lineStart;
        }
      }
    }
    if (last) return at;
    out[at++] = 13;
    out[at++] = 10;
    from = end + 1;
  }
}

// Messages are written into slabs, one after the other, each message's bytes
// a view of its slab: no copy out of a scratch buffer, and no memory of its
// own per message (a 6 KB Buffer is a backing store of its own, outside
// Node's pool, which garbage collection counts and frees one by one). A slab
// is freed once no message written into it is held any more (the SMTP
// client holds one until its socket has written it; the slab's tail left
// over is at most one message's bound).
const SLAB_BYTES = 512 * 1024;
let slab = Buffer.allocUnsafeSlow(SLAB_BYTES);
let slabUsed = 0;

function slabWithRoom(bytes: number): Buffer {
  if (slab.length - slabUsed < bytes) {
    slab = Buffer.allocUnsafeSlow(Math.max(SLAB_BYTES, bytes));
    slabUsed = 0;
  }
  return slab;
}

/** The address with its domain in lower case (domains compare case-insensitively; the local part is the recipient's own). */
export function lowerDomain(address: string): string {
  const at = address.lastIndexOf("@");
  return at < 0 ? address : address.slice(0, at + 1) + address.slice(at + 1).toLowerCase();
}


/**
 * The whole message as it leaves: written, then DKIM-signed with the
 * message's keys (signatures on top, over these exact bytes: nothing
 * rewrites the message after this).
 */
export async function buildRawMessage(message: OutgoingMessage, now: number = Date.now()): Promise<Buffer> {
  return (await buildMessage(message, now)).raw;
}

/** buildRawMessage, saying also whether no line starts with "." (UnsignedMessage.noDotLines; the signatures' lines never do). */
export async function buildMessage(message: OutgoingMessage, now: number = Date.now()): Promise<{ raw: Buffer; noDotLines: boolean }> {
  const unsigned = writeMessage(message, now);
  const raw = message.dkim && message.dkim.length > 0 ? await dkimSign(unsigned, message.dkim) : unsigned.raw;
  return { raw, noDotLines: unsigned.noDotLines };
}
