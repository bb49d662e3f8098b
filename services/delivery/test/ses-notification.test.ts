import { snsTestSigner, TEST_SNS_CERT_URL, type SnsTestSigner } from "@emailsvc/testing";
import { readSesNotification } from "../src/domain/ses-notification";
import { isSnsCertificateUrl, parseSnsMessage, SnsMessageRefused, SnsSignatureVerifier, type SnsMessage } from "../src/domain/sns-signature";

// SES's notifications through SNS, read as the endpoint that takes them in
// will: the signature checked with a certificate of our own (made by openssl,
// served by an injected fetcher, as SNS serves its own; snsTestSigner of
// @emailsvc/testing), then the SES event
// read into per-recipient records. The events are shaped as SES documents
// them (identity notifications and configuration-set events).

const CERT_URL = TEST_SNS_CERT_URL;
let sns: SnsTestSigner;
let certificate: string;
let otherCertificate: string;

beforeAll(() => {
  sns = snsTestSigner();
  ({ certificate, otherCertificate } = sns);
});

afterAll(() => sns.close());

/** Signed by the kit, which writes SNS's string to sign out itself (not snsStringToSign, the code under test). */
function signed(fields: Omit<SnsMessage, "Signature" | "SignatureVersion" | "SigningCertURL">, version: "1" | "2" = "2"): SnsMessage {
  return sns.sign(fields as unknown as Record<string, string>, { version }) as unknown as SnsMessage;
}

const bounceEvent = {
  eventType: "Bounce",
  bounce: {
    bounceType: "Permanent",
    bounceSubType: "General",
    bouncedRecipients: [{ emailAddress: "Jane Doe <Jane@Example.org>", action: "failed", status: "5.1.1", diagnosticCode: "smtp; 550 5.1.1 user unknown" }],
    timestamp: "2026-11-26T10:00:01.000Z",
    feedbackId: "0102abc",
  },
  mail: { timestamp: "2026-11-26T10:00:00.000Z", source: "orders@acme.example", messageId: "0102018f-ses-id-000000", destination: ["jane@example.org"] },
};

const notification = (event: object, subject?: string) => ({
  Type: "Notification" as const,
  MessageId: "22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324",
  TopicArn: "arn:aws:sns:eu-west-1:123456789012:ses-events",
  ...(subject !== undefined ? { Subject: subject } : {}),
  Message: JSON.stringify(event),
  Timestamp: "2026-11-26T10:00:02.000Z",
});

describe("SNS signatures", () => {
  it("verifies SignatureVersion 1 and 2 notifications and subscription confirmations, fetching the certificate once", async () => {
    const fetched: string[] = [];
    const verifier = new SnsSignatureVerifier({ fetchCertificate: async (url) => (fetched.push(url), certificate) });
    await verifier.verify(signed(notification(bounceEvent), "1"));
    await verifier.verify(signed(notification(bounceEvent, "Amazon SES Email Event Notification"), "2"));
    const confirmation = signed({
      Type: "SubscriptionConfirmation",
      MessageId: "165545c9-2a5c-472c-8df2-7ff2be2b3b1b",
      TopicArn: "arn:aws:sns:eu-west-1:123456789012:ses-events",
      Message: "You have chosen to subscribe to the topic",
      Timestamp: "2026-11-26T10:00:00.000Z",
      SubscribeURL: "https://sns.eu-west-1.amazonaws.com/?Action=ConfirmSubscription&Token=abc",
      Token: "abc",
    });
    await verifier.verify(parseSnsMessage(JSON.stringify(confirmation)));
    expect(fetched).toEqual([CERT_URL]);
  });

  it("refuses a message altered after signing, signed by another key, or a Subject added", async () => {
    const verifier = new SnsSignatureVerifier({ fetchCertificate: async () => certificate });
    const message = signed(notification(bounceEvent));
    const altered = { ...message, Message: message.Message.replace("Permanent", "Transient") };
    await expect(verifier.verify(altered)).rejects.toThrow(new SnsMessageRefused("the signature does not verify"));
    await expect(verifier.verify({ ...message, Subject: "added" })).rejects.toThrow(SnsMessageRefused);
    await expect(verifier.verify({ ...message, Signature: "not base64 at all!" })).rejects.toThrow(SnsMessageRefused);
    const byOther = new SnsSignatureVerifier({ fetchCertificate: async () => otherCertificate });
    await expect(byOther.verify(message)).rejects.toThrow("the signature does not verify");
    // Version 1 signature presented as version 2.
    await expect(verifier.verify({ ...signed(notification(bounceEvent), "1"), SignatureVersion: "2" })).rejects.toThrow(SnsMessageRefused);
  });

  it("fetches certificates only from an SNS host over HTTPS, and refuses what is not a valid certificate", async () => {
    for (const url of [
      "http://sns.eu-west-1.amazonaws.com/cert.pem",
      "https://sns.eu-west-1.amazonaws.com.evil.example/cert.pem",
      "https://evil.example/sns.eu-west-1.amazonaws.com/cert.pem",
      "https://s3.amazonaws.com/cert.pem",
      "https://sns.eu-west-1.amazonaws.com:8443/cert.pem",
      "https://user@sns.eu-west-1.amazonaws.com/cert.pem",
      "https://sns.eu-west-1.amazonaws.com/cert.txt",
      "not a url",
    ]) {
      expect({ url, allowed: isSnsCertificateUrl(url) }).toEqual({ url, allowed: false });
    }
    expect(isSnsCertificateUrl(CERT_URL)).toBe(true);
    expect(isSnsCertificateUrl("https://sns.cn-north-1.amazonaws.com.cn/cert.pem")).toBe(true);

    const fetched: string[] = [];
    const verifier = new SnsSignatureVerifier({ fetchCertificate: async (url) => (fetched.push(url), certificate) });
    await expect(verifier.verify({ ...signed(notification(bounceEvent)), SigningCertURL: "https://evil.example/cert.pem" })).rejects.toThrow(/SigningCertURL/);
    expect(fetched).toEqual([]);

    const notPem = new SnsSignatureVerifier({ fetchCertificate: async () => "<html>not found</html>" });
    await expect(notPem.verify(signed(notification(bounceEvent)))).rejects.toThrow(/not a PEM/);
    const failing = new SnsSignatureVerifier({ fetchCertificate: async () => Promise.reject(new Error("ECONNREFUSED")) });
    await expect(failing.verify(signed(notification(bounceEvent)))).rejects.toThrow(/could not be fetched/);
    const later = new SnsSignatureVerifier({ fetchCertificate: async () => certificate, now: () => Date.now() + 10 * 24 * 3600 * 1000 });
    await expect(later.verify(signed(notification(bounceEvent)))).rejects.toThrow(/not valid now/);
  });

  it("refuses a body that is not an SNS message, naming the field", () => {
    expect(() => parseSnsMessage("nope")).toThrow(/not JSON/);
    expect(() => parseSnsMessage(JSON.stringify({ ...notification(bounceEvent), Type: "Other" }))).toThrow(/Type/);
    const { Timestamp: _t, ...withoutTimestamp } = signed(notification(bounceEvent));
    expect(() => parseSnsMessage(JSON.stringify(withoutTimestamp))).toThrow(/Timestamp is missing/);
    expect(() => parseSnsMessage(JSON.stringify({ ...signed(notification(bounceEvent)), SignatureVersion: "3" }))).toThrow(/SignatureVersion/);
    expect(() => parseSnsMessage(JSON.stringify({ ...signed(notification(bounceEvent)), Type: "SubscriptionConfirmation" }))).toThrow(/SubscribeURL is missing/);
  });
});

describe("SES events", () => {
  it("reads a permanent bounce into DSN-shaped recipients, with the SES message id", () => {
    expect(readSesNotification(JSON.stringify(bounceEvent))).toEqual({
      kind: "bounce",
      sesMessageId: "0102018f-ses-id-000000",
      bounceType: "permanent",
      bounceSubType: "General",
      recipients: [{ recipient: "jane@example.org", action: "failed", status: "5.1.1", diagnosticCode: 550, diagnostic: "550 5.1.1 user unknown" }],
    });
  });

  it("reads a transient bounce (identity notification) and fills the status class SES left out", () => {
    const event = {
      notificationType: "Bounce",
      bounce: { bounceType: "Transient", bounceSubType: "MailboxFull", bouncedRecipients: [{ emailAddress: "full@example.org" }, { emailAddress: "x@example.org", status: "4.2.2", diagnosticCode: "smtp; 452 4.2.2 mailbox full" }] },
      mail: { messageId: "m-1" },
    };
    expect(readSesNotification(JSON.stringify(event))).toEqual({
      kind: "bounce",
      sesMessageId: "m-1",
      bounceType: "transient",
      bounceSubType: "MailboxFull",
      recipients: [
        { recipient: "full@example.org", action: "failed", status: "4.0.0", diagnosticCode: undefined, diagnostic: undefined },
        { recipient: "x@example.org", action: "failed", status: "4.2.2", diagnosticCode: 452, diagnostic: "452 4.2.2 mailbox full" },
      ],
    });
  });

  it("reads a complaint with its feedback type, and one without", () => {
    const event = { eventType: "Complaint", complaint: { complainedRecipients: [{ emailAddress: "Angry@Example.org" }], complaintFeedbackType: "abuse" }, mail: { messageId: "m-2" } };
    expect(readSesNotification(JSON.stringify(event))).toEqual({ kind: "complaint", sesMessageId: "m-2", feedbackType: "abuse", recipients: ["angry@example.org"] });
    const bare = { notificationType: "Complaint", complaint: { complainedRecipients: [{ emailAddress: "a@example.org" }] }, mail: { messageId: "m-3" } };
    expect(readSesNotification(JSON.stringify(bare))).toMatchObject({ kind: "complaint", feedbackType: undefined });
  });

  it("reads a delivery as delivered recipients with the receiving server's reply", () => {
    const event = { eventType: "Delivery", delivery: { recipients: ["jane@example.org"], smtpResponse: "250 2.6.0 Message received", processingTimeMillis: 540 }, mail: { messageId: "m-4" } };
    expect(readSesNotification(JSON.stringify(event))).toEqual({
      kind: "delivered",
      sesMessageId: "m-4",
      recipients: [{ recipient: "jane@example.org", action: "delivered", status: "2.0.0", diagnosticCode: 250, diagnostic: "250 2.6.0 Message received" }],
    });
  });

  it("calls anything else unrecognised, with a reason that quotes no value", () => {
    const cases: Array<[string, RegExp]> = [
      ["{", /not JSON/],
      ["[]", /not a JSON object/],
      [JSON.stringify({ eventType: "Open", mail: { messageId: "m" } }), /type Open/],
      [JSON.stringify({ eventType: "secret@example.org", mail: { messageId: "m" } }), /\(not a name\)/],
      [JSON.stringify({ eventType: "Bounce", bounce: { bouncedRecipients: [] } }), /mail\.messageId/],
      [JSON.stringify({ eventType: "Bounce", bounce: { bouncedRecipients: [{ emailAddress: "no address" }] }, mail: { messageId: "m" } }), /no recipient/],
      [JSON.stringify({ eventType: "Delivery", mail: { messageId: "m" } }), /delivery\.recipients/],
    ];
    for (const [message, reason] of cases) {
      const event = readSesNotification(message);
      expect(event.kind).toBe("unrecognised");
      expect((event as { reason: string }).reason).toMatch(reason);
      expect((event as { reason: string }).reason).not.toContain("@");
    }
  });
});
