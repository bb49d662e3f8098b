import { createVerify, X509Certificate } from "node:crypto";

// Amazon SNS message signatures: how the endpoint that will take SES's
// notifications (next step, see the README) knows a message comes from SNS.
// The string to sign per message type and SignatureVersion 1 (SHA1withRSA)
// and 2 (SHA256withRSA), as SNS documents them; the certificate fetched only
// from an SNS host over HTTPS, and cached. The fetcher is injected so that
// tests sign with their own key and certificate.

/** The fields of an SNS message (the JSON SNS POSTs) that are read. */
export interface SnsMessage {
  Type: "Notification" | "SubscriptionConfirmation" | "UnsubscribeConfirmation";
  MessageId: string;
  TopicArn: string;
  Subject?: string | undefined;
  Message: string;
  Timestamp: string;
  SignatureVersion: "1" | "2";
  Signature: string;
  SigningCertURL: string;
  /** SubscriptionConfirmation and UnsubscribeConfirmation: the URL to visit to confirm, and the token in it. */
  SubscribeURL?: string | undefined;
  Token?: string | undefined;
}

/** A message refused: not SNS's, or not well formed. `reason` holds no part of the message but field names. */
export class SnsMessageRefused extends Error {
  constructor(readonly reason: string) {
    super(`SNS message refused: ${reason}`);
    this.name = "SnsMessageRefused";
  }
}

const TYPES = new Set(["Notification", "SubscriptionConfirmation", "UnsubscribeConfirmation"]);

/** Parses the body SNS POSTs; refuses a message without the fields its type is signed over. */
export function parseSnsMessage(body: string): SnsMessage {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    throw new SnsMessageRefused("the body is not JSON");
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) throw new SnsMessageRefused("the body is not a JSON object");
  const fields = json as Record<string, unknown>;
  if (typeof fields.Type !== "string" || !TYPES.has(fields.Type)) throw new SnsMessageRefused("Type is not Notification, SubscriptionConfirmation or UnsubscribeConfirmation");
  const required = ["MessageId", "TopicArn", "Message", "Timestamp", "SignatureVersion", "Signature", "SigningCertURL", ...(fields.Type === "Notification" ? [] : ["SubscribeURL", "Token"])];
  for (const name of required) if (typeof fields[name] !== "string" || fields[name] === "") throw new SnsMessageRefused(`${name} is missing`);
  if (fields.Subject !== undefined && typeof fields.Subject !== "string") throw new SnsMessageRefused("Subject is not a string");
  if (fields.SignatureVersion !== "1" && fields.SignatureVersion !== "2") throw new SnsMessageRefused("SignatureVersion is not 1 or 2");
  return fields as unknown as SnsMessage;
}

/**
 * The string SNS signs: for a Notification Message, MessageId, Subject (when
 * there is one), Timestamp, TopicArn and Type; for a (Un)SubscriptionConfirmation
 * Message, MessageId, SubscribeURL, Timestamp, Token, TopicArn and Type; each
 * as its name, a newline, its value, a newline.
 */
export function snsStringToSign(message: SnsMessage): string {
  const names =
    message.Type === "Notification"
      ? ["Message", "MessageId", ...(message.Subject !== undefined ? ["Subject"] : []), "Timestamp", "TopicArn", "Type"]
      : ["Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"];
  return names.map((name) => `${name}\n${(message as unknown as Record<string, string>)[name]}\n`).join("");
}

/** `raw` as a URL when it is SNS's own: https on the default port, no credentials, `sns.<region>.amazonaws.com` (or `.com.cn`); else null. */
function snsUrl(raw: string): URL | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return null;
  }
  const ours = url.protocol === "https:" && url.port === "" && !url.username && !url.password && /^sns\.[a-z0-9-]+\.amazonaws\.com(\.cn)?$/.test(url.hostname);
  return ours ? url : null;
}

/** `https://sns.<region>.amazonaws.com/….pem` (or amazonaws.com.cn): the only places a signing certificate is fetched from. */
export function isSnsCertificateUrl(raw: string): boolean {
  const url = snsUrl(raw);
  return url !== null && url.pathname.endsWith(".pem") && url.search === "";
}

/** `https://sns.<region>.amazonaws.com/?Action=ConfirmSubscription&…`: the only SubscribeURL visited. */
export function isSnsSubscribeUrl(raw: string): boolean {
  const url = snsUrl(raw);
  return url !== null && url.pathname === "/" && url.searchParams.get("Action") === "ConfirmSubscription";
}

/** Fetches a certificate (PEM) from a URL isSnsCertificateUrl allowed. */
export type CertificateFetcher = (url: string) => Promise<string>;

const MAX_CERTIFICATE_BYTES = 16 * 1024;

/** Over HTTPS, no redirects, 5 s, at most 16 KiB. */
export const fetchCertificate: CertificateFetcher = async (url) => {
  const response = await fetch(url, { redirect: "error", signal: AbortSignal.timeout(5000) });
  if (!response.ok) throw new Error(`the signing certificate answered ${response.status}`);
  const text = await response.text();
  if (text.length > MAX_CERTIFICATE_BYTES) throw new Error("the signing certificate is too large");
  return text;
};

export interface SnsSignatureVerifierOptions {
  fetchCertificate?: CertificateFetcher;
  /** Certificates kept (SNS signs with few; the oldest out first). */
  cacheSize?: number;
  now?: () => number;
}

/** Verifies SNS messages' signatures; a message whose signature does not verify is refused (SnsMessageRefused). */
export class SnsSignatureVerifier {
  private readonly fetch: CertificateFetcher;
  private readonly cacheSize: number;
  private readonly now: () => number;
  /** By URL: the certificate, or its fetch in flight (concurrent messages fetch it once). */
  private readonly certificates = new Map<string, Promise<X509Certificate>>();

  constructor(options: SnsSignatureVerifierOptions = {}) {
    this.fetch = options.fetchCertificate ?? fetchCertificate;
    this.cacheSize = options.cacheSize ?? 20;
    this.now = options.now ?? Date.now;
  }

  async verify(message: SnsMessage): Promise<void> {
    if (!isSnsCertificateUrl(message.SigningCertURL)) throw new SnsMessageRefused("SigningCertURL is not an https://sns.<region>.amazonaws.com/….pem URL");
    const certificate = await this.certificate(message.SigningCertURL);
    const now = new Date(this.now());
    if (now < new Date(certificate.validFrom) || now > new Date(certificate.validTo)) throw new SnsMessageRefused("the signing certificate is not valid now");
    const verifier = createVerify(message.SignatureVersion === "1" ? "RSA-SHA1" : "RSA-SHA256");
    verifier.update(snsStringToSign(message), "utf8");
    let valid: boolean;
    try {
      valid = verifier.verify(certificate.publicKey, message.Signature, "base64");
    } catch {
      valid = false;
    }
    if (!valid) throw new SnsMessageRefused("the signature does not verify");
  }

  private certificate(url: string): Promise<X509Certificate> {
    const cached = this.certificates.get(url);
    if (cached) return cached;
    const loading = this.fetch(url).then(
      (pem) => {
        try {
          return new X509Certificate(pem);
        } catch {
          throw new SnsMessageRefused("the signing certificate is not a PEM X.509 certificate");
        }
      },
      () => {
        throw new SnsMessageRefused("the signing certificate could not be fetched");
      },
    );
    // A failed fetch is not kept: the next message tries again.
    loading.catch(() => this.certificates.delete(url));
    this.certificates.set(url, loading);
    while (this.certificates.size > this.cacheSize) this.certificates.delete(this.certificates.keys().next().value!);
    return loading;
  }
}
