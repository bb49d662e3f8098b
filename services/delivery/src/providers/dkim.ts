import DKIM from "nodemailer/lib/dkim";
import { DKIM_SIGNED_HEADERS, type DkimSigningKey } from "../domain/message.js";

/**
 * Signs a raw message (RFC 6376, relaxed/relaxed, rsa-sha256) with each RSA
 * key given, with nodemailer's signer: the DKIM-Signature headers go on top of
 * the exact bytes that are then sent. `h=` lists the DKIM_SIGNED_HEADERS the
 * message has. Keys of other types are left out: nodemailer signs with RSA
 * only (an Ed25519 signature, RFC 8463, would need a signer of its own).
 */
export async function dkimSign(raw: Buffer, keys: readonly DkimSigningKey[]): Promise<Buffer> {
  const rsa = keys.filter((key) => key.privateKey.asymmetricKeyType === "rsa");
  if (rsa.length === 0) return raw;
  const signer = new DKIM({
    keys: rsa.map((key) => ({ domainName: key.domain, keySelector: key.selector, privateKey: key.privateKey })),
    headerFieldNames: DKIM_SIGNED_HEADERS.join(":"),
  });
  const chunks: Buffer[] = [];
  const stream = signer.sign(raw);
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
