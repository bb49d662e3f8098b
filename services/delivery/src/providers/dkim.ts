import { createHash, sign as signData, type KeyObject } from "node:crypto";
import DKIM from "nodemailer/lib/dkim";
import { DKIM_SIGNED_HEADERS, type DkimSigningKey } from "../domain/message.js";

// DKIM signatures (RFC 6376, relaxed/relaxed) over the exact bytes a provider
// sends. RSA (rsa-sha256) is nodemailer's signer. nodemailer signs with RSA
// only, so the Ed25519 signature (RFC 8463, ed25519-sha256), which receivers
// that know it check beside the RSA one, is made here from what nodemailer's
// signature already fixed: the same body hash (`bh=`, one relaxed body
// canonicalisation for both) and the same signed headers (`h=`). What is ours
// is the relaxed canonicalisation of those header fields (RFC 6376 3.4.2) and
// the signature itself.

/**
 * The raw message with a DKIM-Signature for each key on top: RSA keys signed
 * by nodemailer (`h=` the DKIM_SIGNED_HEADERS the message has), then an
 * Ed25519 signature for each Ed25519 key, over the same body hash and header
 * fields. Without an RSA key nothing is signed (the Ed25519 signature borrows
 * the RSA one's body hash; a domain always has both keys).
 */
export async function dkimSign(raw: Buffer, keys: readonly DkimSigningKey[]): Promise<Buffer> {
  const rsa = keys.filter((key) => key.privateKey.asymmetricKeyType === "rsa");
  if (rsa.length === 0) return raw;
  const signer = new DKIM({
    keys: rsa.map((key) => ({ domainName: key.domain, keySelector: key.selector, privateKey: key.privateKey })),
    headerFieldNames: DKIM_SIGNED_HEADERS.join(":"),
  });
  const chunks: Buffer[] = [];
  for await (const chunk of signer.sign(raw)) chunks.push(chunk as Buffer);
  let signed = Buffer.concat(chunks);
  for (const key of keys.filter((k) => k.privateKey.asymmetricKeyType === "ed25519")) {
    signed = Buffer.concat([Buffer.from(ed25519Signature(signed, key.domain, key.selector, key.privateKey)), signed]);
  }
  return signed;
}

/** A header field as it stands: its name and its whole text, folded lines and all (without the final CRLF). */
interface HeaderField {
  name: string;
  text: string;
}

function headerFields(message: string): HeaderField[] {
  const end = message.indexOf("\r\n\r\n");
  const block = end < 0 ? message : message.slice(0, end);
  const fields: HeaderField[] = [];
  for (const line of block.split("\r\n")) {
    if (/^[ \t]/.test(line) && fields.length > 0) fields[fields.length - 1]!.text += `\r\n${line}`;
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

/** A tag's value in a DKIM-Signature (`bh`, `h`), whitespace removed. */
function tagOf(signature: string, tag: string): string {
  const match = new RegExp(`(?:^|;)\\s*${tag}\\s*=([^;]*)`).exec(signature.slice(signature.indexOf(":") + 1));
  if (!match) throw new Error(`the RSA DKIM-Signature has no ${tag}=`);
  return match[1]!.replace(/\s+/g, "");
}

/**
 * The `DKIM-Signature: v=1; a=ed25519-sha256; …` header line (with its CRLF)
 * for a message nodemailer has signed with RSA: the header fields its `h=`
 * names, each the last instance not yet used (RFC 6376 5.4.2), relaxed, then
 * this header with an empty `b=`; Ed25519 over their SHA-256 (RFC 8463 3).
 */
function ed25519Signature(message: Buffer, domain: string, selector: string, privateKey: KeyObject): string {
  const fields = headerFields(message.toString("latin1"));
  const rsa = fields.find((field) => field.name === "dkim-signature" && /a\s*=\s*rsa-sha256/.test(field.text));
  if (!rsa) throw new Error("the message carries no RSA DKIM-Signature to take the body hash from");
  const bodyHash = tagOf(rsa.text, "bh");
  const signedNames = tagOf(rsa.text, "h").split(":");
  const used = new Map<string, number>();
  const data: string[] = [];
  for (const name of signedNames.map((n) => n.toLowerCase())) {
    const instances = fields.filter((field) => field.name === name);
    const taken = used.get(name) ?? 0;
    const field = instances[instances.length - 1 - taken];
    used.set(name, taken + 1);
    // A name signed but absent counts as an empty field: nothing to add (RFC 6376 5.4).
    if (field) data.push(`${relaxedHeader(field.text)}\r\n`);
  }
  const header = `DKIM-Signature: v=1; a=ed25519-sha256; c=relaxed/relaxed; d=${domain}; q=dns/txt; s=${selector}; bh=${bodyHash}; h=${signedNames.join(":")}; b=`;
  data.push(relaxedHeader(header));
  const digest = createHash("sha256").update(data.join(""), "latin1").digest();
  const signature = signData(null, digest, privateKey).toString("base64");
  return `${foldSignature(header + signature)}\r\n`;
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
