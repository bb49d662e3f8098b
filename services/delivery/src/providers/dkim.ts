import { createHash, sign as signData, type KeyObject } from "node:crypto";
import { DKIM_SIGNED_HEADERS, type DkimSigningKey } from "../domain/message.js";
import type { UnsignedMessage } from "./mime.js";

// DKIM signatures (RFC 6376, relaxed/relaxed; RFC 8463 for Ed25519) over the
// exact bytes a provider sends. The body is hashed once for every key; each
// key signs the relaxed form of the same header fields (the
// DKIM_SIGNED_HEADERS the message has) followed by its own signature header.

/** The header names signed, lower case, in DKIM_SIGNED_HEADERS' order. */
const SIGNED = DKIM_SIGNED_HEADERS.map((name) => name.toLowerCase());

/**
 * The message with a DKIM-Signature for each key on top (RSA as rsa-sha256,
 * Ed25519 as ed25519-sha256), all over one body hash and the same header
 * fields. The signatures are made on libuv's thread pool (crypto.sign with a
 * callback): an RSA-2048 signature is 300-400 µs of CPU, which on the
 * calling thread would be most of a signed message's cost and would hold
 * every other send of the delivery thread meanwhile.
 */
export async function dkimSign(message: UnsignedMessage, keys: readonly DkimSigningKey[]): Promise<Buffer> {
  const { raw, bodyStart } = message;
  const bodyHash = createHash("sha256").update(relaxedBody(raw.subarray(bodyStart))).digest("base64");
  const fields = headerFields(raw.toString("latin1", 0, bodyStart));
  const names: string[] = [];
  let signedData = "";
  for (const name of SIGNED) {
    // The last instance of each (a message of ours has one of each).
    const field = fields.findLast((f) => f.name === name);
    if (!field) continue;
    names.push(name);
    signedData += `${relaxedHeader(field.text)}\r\n`;
  }
  const signatures: Array<Promise<string>> = [];
  for (const key of keys) {
    const type = key.privateKey.asymmetricKeyType;
    if (type !== "rsa" && type !== "ed25519") continue;
    const algorithm = type === "rsa" ? "rsa-sha256" : "ed25519-sha256";
    const header = `DKIM-Signature: v=1; a=${algorithm}; c=relaxed/relaxed; d=${key.domain}; q=dns/txt; s=${key.selector}; bh=${bodyHash}; h=${names.join(":")}; b=`;
    const data = Buffer.from(signedData + relaxedHeader(header), "latin1");
    // RFC 8463 3: Ed25519 signs the SHA-256 of the data (PureEdDSA over the hash); RSA signs the data with SHA-256.
    signatures.push(
      signOffThread(type === "rsa" ? "sha256" : null, type === "rsa" ? data : createHash("sha256").update(data).digest(), key.privateKey).then(
        (signature) => `${foldSignature(header + signature.toString("base64"))}\r\n`,
      ),
    );
  }
  return signatures.length === 0 ? raw : Buffer.concat([Buffer.from((await Promise.all(signatures)).join(""), "latin1"), raw]);
}

/** crypto.sign on the thread pool. */
function signOffThread(algorithm: string | null, data: Buffer, key: KeyObject): Promise<Buffer> {
  return new Promise((resolve, reject) => signData(algorithm, data, key, (err, signature) => (err ? reject(err) : resolve(signature))));
}

/**
 * RFC 6376 3.4.4: whitespace runs one space, none at a line end, no empty
 * lines at the end, a non-empty body ending in CRLF. A quoted-printable body
 * of the message writer has no whitespace runs and none at line ends, so it
 * is taken as it is (checked, not assumed); a 7bit one (an HTML part's
 * indentation) is rewritten in one pass over its bytes.
 */
export function relaxedBody(body: Buffer): Buffer {
  let canonical = body;
  if (body.indexOf(9) >= 0 || body.indexOf("  ") >= 0 || body.indexOf(" \r\n") >= 0) canonical = collapseWhitespace(body);
  let end = canonical.length;
  while (end >= 2 && canonical[end - 2] === 13 && canonical[end - 1] === 10) end -= 2;
  if (end === 0) return Buffer.alloc(0);
  return Buffer.concat([canonical.subarray(0, end), Buffer.from("\r\n", "latin1")]);
}

/** Runs of spaces and tabs as one space, none before a CRLF or at the end. */
function collapseWhitespace(body: Buffer): Buffer {
  const out = Buffer.allocUnsafe(body.length);
  let at = 0;
  let space = false;
  const length = body.length;
  for (let i = 0; i < length; i++) {
    const byte = body[i]!;
    if (byte === 32 || byte === 9) {
      space = true;
      continue;
    }
    // Whitespace before a line end goes; before anything else it is one space.
    if (space && !(byte === 13 && body[i + 1] === 10)) out[at++] = 32;
    space = false;
    out[at++] = byte;
  }
  return out.subarray(0, at);
}

/** A header field as it stands: its name (lower case) and its whole text, folded lines and all (without the final CRLF). */
interface HeaderField {
  name: string;
  text: string;
}

function headerFields(block: string): HeaderField[] {
  const fields: HeaderField[] = [];
  for (const line of block.split("\r\n")) {
    if (line === "") continue;
    if ((line.charCodeAt(0) === 32 || line.charCodeAt(0) === 9) && fields.length > 0) fields[fields.length - 1]!.text += `\r\n${line}`;
    else fields.push({ name: line.slice(0, line.indexOf(":")).trim().toLowerCase(), text: line });
  }
  return fields;
}

/** RFC 6376 3.4.2: name lower case, unfolded, runs of whitespace one space, none at the end or around the colon. */
export function relaxedHeader(text: string): string {
  const colon = text.indexOf(":");
  const name = text.slice(0, colon).trim().toLowerCase();
  const value = text
    .slice(colon + 1)
    .replace(/\r\n/g, "")
    .replace(/[ \t]+/g, " ")
    .trim();
  return `${name}:${value}`;
}

/** Folds a long DKIM-Signature line at its spaces and inside `b=` (lines of at most 76 characters; folding whitespace is ignored by verifiers). */
function foldSignature(line: string): string {
  const [head, b] = [line.slice(0, line.lastIndexOf("b=") + 2), line.slice(line.lastIndexOf("b=") + 2)];
  const out: string[] = [];
  let current = "";
  for (const word of head.split(" ")) {
    if (current && current.length + 1 + word.length > 76) {
      out.push(current);
      current = ` ${word}`;
    } else current = current ? `${current} ${word}` : word;
  }
  const parts = [current + b.slice(0, Math.max(0, 76 - current.length))];
  for (let at = Math.max(0, 76 - current.length); at < b.length; at += 75) parts.push(` ${b.slice(at, at + 75)}`);
  return [...out, ...parts].join("\r\n");
}
