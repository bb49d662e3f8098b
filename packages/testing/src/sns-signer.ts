import { execFileSync } from "node:child_process";
import { createSign } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

// Amazon SNS's side of a test: a key and a self-signed certificate of our own
// (made by openssl), served by a fetcher the delivery service is given in
// place of SNS's HTTPS, and messages signed with that key exactly as SNS
// signs them (SignatureVersion 2, SHA256withRSA over the string to sign of
// the message's type). What SNS would serve at SubscribeURL is recorded.

export const TEST_SNS_CERT_URL = "https://sns.eu-west-1.amazonaws.com/SimpleNotificationService-0000000000000000000000.pem";

export interface SnsTestSigner {
  /** The certificate's PEM. */
  readonly certificate: string;
  /** Another certificate (of the key `forged` signs with): what a verifier fetching the wrong one sees. */
  readonly otherCertificate: string;
  /** Serves the certificate at TEST_SNS_CERT_URL and records visits to any other URL (a SubscribeURL). */
  fetch(url: string): Promise<string>;
  /** URLs fetched other than the certificate's, oldest first. */
  readonly visited: string[];
  /** An SNS message of `fields`, signed (SignatureVersion 2 unless `version` says 1; with another key: `forged`). */
  sign(fields: Record<string, string>, options?: SignOptions): Record<string, string>;
  /** A Notification on `topicArn` carrying `event` (SES's event, as JSON), signed. */
  notification(topicArn: string, event: object, options?: SignOptions & { messageId?: string }): Record<string, string>;
  close(): void;
}

export interface SignOptions {
  forged?: boolean;
  /** 1: SHA1withRSA; 2 (default): SHA256withRSA. */
  version?: "1" | "2";
}

// Written out here rather than taken from the code under test, so that a
// mistake there fails the tests instead of signing along with it.
const SIGNED_FIELDS = {
  Notification: ["Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type"],
  Confirmation: ["Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"],
};

export function snsTestSigner(): SnsTestSigner {
  const dir = mkdtempSync(join(tmpdir(), "sns-signer-"));
  const make = (name: string) => {
    execFileSync(
      "openssl",
      ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=sns.amazonaws.com", "-days", "2", "-keyout", join(dir, `${name}.key`), "-out", join(dir, `${name}.pem`)],
      { stdio: "ignore" },
    );
    return { key: readFileSync(join(dir, `${name}.key`), "utf8"), cert: readFileSync(join(dir, `${name}.pem`), "utf8") };
  };
  const signing = make("signing");
  const other = make("other");
  const visited: string[] = [];
  let sequence = 0;
  const sign = (fields: Record<string, string>, options: SignOptions = {}) => {
    const version = options.version ?? "2";
    const message: Record<string, string> = { ...fields, SignatureVersion: version, SigningCertURL: TEST_SNS_CERT_URL };
    const names = message.Type === "Notification" ? SIGNED_FIELDS.Notification : SIGNED_FIELDS.Confirmation;
    const text = names.filter((n) => message[n] !== undefined).map((n) => `${n}\n${message[n]}\n`).join("");
    const signer = createSign(version === "1" ? "RSA-SHA1" : "RSA-SHA256");
    signer.update(text, "utf8");
    return { ...message, Signature: signer.sign(options.forged ? other.key : signing.key, "base64") };
  };
  return {
    certificate: signing.cert,
    otherCertificate: other.cert,
    visited,
    async fetch(url) {
      if (url === TEST_SNS_CERT_URL) return signing.cert;
      visited.push(url);
      return "<ConfirmSubscriptionResponse/>";
    },
    sign,
    notification(topicArn, event, options = {}) {
      sequence += 1;
      return sign(
        {
          Type: "Notification",
          MessageId: options.messageId ?? `00000000-0000-4000-8000-${String(sequence).padStart(12, "0")}`,
          TopicArn: topicArn,
          Message: JSON.stringify(event),
          Timestamp: new Date().toISOString(),
        },
        options,
      );
    },
    close: () => rmSync(dir, { recursive: true, force: true }),
  };
}
