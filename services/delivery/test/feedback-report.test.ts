import { createTransport } from "nodemailer";
import { KeyRing } from "@emailsvc/tokens";
import { SmtpSink, startHaraka, type HarakaRelay } from "@emailsvc/testing";
import { fieldGroups, isComplaint, readFeedbackReport } from "../src/domain/feedback-report";
import { bounceHostFor, emailIdOfReturnPath, returnPathFor } from "../src/domain/return-path";

// What comes back to a return path, read as the bounce receiver will: real
// DSNs made by a real MTA (Haraka, meeting a next hop that refuses), and a
// complaint in the ARF format mailbox providers' feedback loops send. And
// the return path itself: which email it names, and that a forged one names
// none.

const EMAIL_ID = "eml_01jbz6k8m2n3p4q5r6s7t8v9wx";
const ring = new KeyRing([{ id: "k2", secret: Buffer.alloc(32, 2) }]);

describe("return paths (VERP)", () => {
  it("names its email, aligned with a verified sending domain, and stays a short lower-case local part", () => {
    const address = returnPathFor(ring, EMAIL_ID, bounceHostFor("Mail.Acme.example", "bounces.platform.example"));
    expect(address).toMatch(/^b\+eml_01jbz6k8m2n3p4q5r6s7t8v9wx\.[0-9a-f]{16}@bounces\.mail\.acme\.example$/);
    expect(address.split("@")[0]!.length).toBeLessThanOrEqual(64);
    expect(emailIdOfReturnPath(ring, address)).toBe(EMAIL_ID);
    expect(emailIdOfReturnPath(ring, address.toUpperCase())).toBe(EMAIL_ID); // a relay that folds case
    expect(bounceHostFor(undefined, "Bounces.Platform.example")).toBe("bounces.platform.example");
  });

  it("still reads one signed before a key rotation, and names nothing for a forged, altered or foreign address", () => {
    const old = new KeyRing([{ id: "k1", secret: Buffer.alloc(32, 1) }]);
    const rotated = new KeyRing([{ id: "k2", secret: Buffer.alloc(32, 2) }, { id: "k1", secret: Buffer.alloc(32, 1) }]);
    const signedBefore = returnPathFor(old, EMAIL_ID, "bounces.platform.example");
    expect(emailIdOfReturnPath(rotated, signedBefore)).toBe(EMAIL_ID);
    expect(emailIdOfReturnPath(ring, signedBefore)).toBeNull(); // that key is gone
    const other = "eml_01jbz6k8m2n3p4q5r6s7t8v9wy";
    const [local, host] = returnPathFor(ring, EMAIL_ID, "b.example").split("@") as [string, string];
    expect(emailIdOfReturnPath(ring, `${local.replace(EMAIL_ID, other)}@${host}`)).toBeNull();
    expect(emailIdOfReturnPath(ring, `b+${EMAIL_ID}.0000000000000000@b.example`)).toBeNull();
    for (const foreign of ["postmaster@b.example", "b+@b.example", `b+${EMAIL_ID}@b.example`, "no-at-sign", `b+${EMAIL_ID}.zz@b.example`]) {
      expect(emailIdOfReturnPath(ring, foreign)).toBeNull();
    }
    expect(() => returnPathFor(ring, "not-an-email-id", "b.example")).toThrow(RangeError);
  });
});

describe("DSNs from a real MTA", () => {
  const nextHop = new SmtpSink();
  const returned = new SmtpSink();
  let relay: HarakaRelay;
  const returnPath = returnPathFor(ring, EMAIL_ID, "bounces.sender.test");

  beforeAll(async () => {
    await nextHop.start();
    await returned.start();
    relay = await startHaraka({ routes: { "bounces.sender.test": { port: returned.port }, "*": { port: nextHop.port } }, tempFailIntervals: "5s" });
  }, 300_000);
  afterAll(async () => {
    await relay?.stop();
    await nextHop.close();
    await returned.close();
  });

  async function bounceOf(recipient: string, subject: string): Promise<string> {
    const transport = createTransport({ host: relay.host, port: relay.port, secure: false, ignoreTLS: true });
    try {
      await transport.sendMail({ envelope: { from: returnPath, to: [recipient] }, from: "news@sender.test", to: recipient, subject, text: "hello" });
    } finally {
      transport.close();
    }
    for (let i = 0; i < 400; i++) {
      const found = returned.messages.find((m) => m.raw.includes(recipient));
      if (found) {
        expect(found.envelope.to).toEqual([returnPath]);
        return found.raw;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`no DSN for ${recipient}; relay log ${relay.logFile}`);
  }

  it("reads a 550 at RCPT: failed, 5.1.1, the remote server's words", async () => {
    nextHop.rcptReplies.set("gone@mailbox.test", { code: 550, text: "5.1.1 <gone@mailbox.test>: user unknown" });
    const report = readFeedbackReport(await bounceOf("gone@mailbox.test", "hard"));
    expect(report).toEqual({
      kind: "delivery_status",
      recipients: [{ recipient: "gone@mailbox.test", action: "failed", status: "5.1.1", diagnosticCode: 550, diagnostic: expect.stringMatching(/^550 5\.1\.1 .*user unknown/) }],
    });
  });

  it("reads a 450 the relay gave up on: failed, with the last temporary answer as the diagnostic", async () => {
    nextHop.rcptReplies.set("full@mailbox.test", { code: 450, text: "4.2.2 mailbox full" });
    const report = readFeedbackReport(await bounceOf("full@mailbox.test", "soft"));
    expect(report.kind).toBe("delivery_status");
    const [recipient] = report.kind === "delivery_status" ? report.recipients : [];
    expect(recipient).toMatchObject({ recipient: "full@mailbox.test", action: "failed", diagnosticCode: 450, diagnostic: "450 4.2.2 mailbox full" });
  });
});

describe("complaints (ARF) and what is neither", () => {
  const arf = (feedbackType: string) =>
    [
      "From: feedback@mailbox.example",
      "To: fbl@bounces.platform.example",
      "Subject: complaint about a message from sender.test",
      "MIME-Version: 1.0",
      'Content-Type: multipart/report; report-type=feedback-report; boundary="b1"',
      "",
      "--b1",
      "Content-Type: text/plain",
      "",
      "A user of ours marked this message as spam.",
      "--b1",
      "Content-Type: message/feedback-report",
      "",
      `Feedback-Type: ${feedbackType}`,
      "User-Agent: MailboxFBL/2.1",
      "Version: 1",
      `Original-Mail-From: <${returnPathFor(ring, EMAIL_ID, "bounces.sender.test")}>`,
      "Original-Rcpt-To: <Reader@Mailbox.example>",
      "Arrival-Date: Thu, 26 Nov 2026 10:00:00 +0000",
      "",
      "--b1",
      "Content-Type: text/rfc822-headers",
      "",
      "From: news@sender.test",
      "Subject: our news",
      "--b1--",
      "",
    ].join("\r\n");

  it("reads who complained and the return path it names", () => {
    const report = readFeedbackReport(arf("abuse"));
    expect(report).toEqual({
      kind: "complaint",
      feedbackType: "abuse",
      originalRecipient: "reader@mailbox.example",
      originalMailFrom: returnPathFor(ring, EMAIL_ID, "bounces.sender.test"),
    });
    expect(emailIdOfReturnPath(ring, (report as { originalMailFrom: string }).originalMailFrom)).toBe(EMAIL_ID);
  });

  it("calls a plain message, an auto-reply, or a report without its fields unrecognised, saying why", () => {
    expect(readFeedbackReport("From: a@b.example\r\nSubject: Out of office\r\n\r\nBack Monday.\r\n")).toEqual({ kind: "unrecognised", reason: "not a multipart/report" });
    const noType = arf("abuse").replace(/Feedback-Type: abuse\r\n/, "");
    expect(readFeedbackReport(noType)).toEqual({ kind: "unrecognised", reason: "a feedback report without Feedback-Type" });
    const dsnWithoutRecipients = arf("x").replace("report-type=feedback-report", "report-type=delivery-status").replace("message/feedback-report", "message/delivery-status");
    expect((readFeedbackReport(dsnWithoutRecipients)).kind).toBe("unrecognised");
  });

  it("counts as a complaint what calls the mail spam, from ARF and SES alike, and not a mark taken back or a forgery report", () => {
    expect(["abuse", "fraud", "virus", "other", undefined].map(isComplaint)).toEqual([true, true, true, true, true]);
    expect(["not-spam", "auth-failure"].map(isComplaint)).toEqual([false, false]);
  });

  it("reads report fields with folded lines and repeated names as RFC 3464 writes them", () => {
    const groups = fieldGroups("Reporting-MTA: dns; relay.test\r\n\r\nFinal-Recipient: rfc822;\r\n  a@b.example\r\nAction: failed\r\nAction: delayed\r\nStatus: 5.1.1\r\n");
    expect(groups).toHaveLength(2);
    expect(groups[1]!.get("final-recipient")).toBe("rfc822; a@b.example");
    expect(groups[1]!.get("action")).toBe("failed");
  });
});
