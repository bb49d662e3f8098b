import { createTransport } from "nodemailer";
import { SmtpSink, startHaraka, type HarakaRelay } from "../src/index";

// The relay kit against two SmtpSinks: one for the recipients' domain (its
// answers set per test), one standing in for the platform's bounce receiver
// (the return path's domain). What the deliverability tests rely on: mail is
// relayed with its envelope, a 5xx at RCPT comes back at once as an RFC 3464
// DSN to the return path, and a 4xx is retried on the relay's schedule and
// comes back as a DSN once that is used up.

const RETURN_PATH = "b+em_test.sig@bounces.sender.test";

describe("Haraka relay kit", () => {
  const recipients = new SmtpSink();
  const bounces = new SmtpSink();
  let relay: HarakaRelay;

  beforeAll(async () => {
    await recipients.start();
    await bounces.start();
    relay = await startHaraka({
      routes: { "bounces.sender.test": { port: bounces.port }, "*": { port: recipients.port } },
      tempFailIntervals: "5s",
    });
  }, 300_000);
  afterAll(async () => {
    await relay?.stop();
    await recipients.close();
    await bounces.close();
  });

  async function send(to: string[], subject: string): Promise<void> {
    const transport = createTransport({ host: relay.host, port: relay.port, secure: false, ignoreTLS: true });
    try {
      await transport.sendMail({ envelope: { from: RETURN_PATH, to }, from: "news@sender.test", to: to.join(", "), subject, text: "hello" });
    } finally {
      transport.close();
    }
  }

  async function dsnFor(recipient: string): Promise<{ envelopeFrom: string; to: string[]; report: string }> {
    for (let i = 0; i < 300; i++) {
      const found = bounces.messages.find((m) => m.raw.includes(`Final-Recipient: rfc822;${recipient}`));
      if (found) return { envelopeFrom: found.envelope.from, to: found.envelope.to, report: found.raw };
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`no DSN for ${recipient} reached the return path; relay log: ${relay.logFile}`);
  }

  it("relays a message with its envelope to the recipient's domain", async () => {
    await send(["ok@mailbox.test"], "relayed");
    await recipients.whenAccepted(1);
    const arrived = recipients.messages.find((m) => m.parsed.subject === "relayed")!;
    expect(arrived.envelope).toEqual({ from: RETURN_PATH, to: ["ok@mailbox.test"] });
  });

  it("returns a 550 at RCPT as a DSN to the return path, with the status and the next hop's diagnostic", async () => {
    recipients.rcptReplies.set("gone@mailbox.test", { code: 550, text: "5.1.1 <gone@mailbox.test>: user unknown" });
    await send(["gone@mailbox.test"], "hard");
    const dsn = await dsnFor("gone@mailbox.test");
    expect(dsn.envelopeFrom).toBe(""); // a DSN has a null return path (RFC 3464 §2), so it never bounces itself
    expect(dsn.to).toEqual([RETURN_PATH]);
    expect(dsn.report).toMatch(/Content-Type: multipart\/report; report-type=delivery-status/i);
    expect(dsn.report).toMatch(/Action: failed/);
    expect(dsn.report).toMatch(/Status: 5\.1\.1/);
    expect(dsn.report).toMatch(/user unknown/);
  });

  it("retries a 450 on its schedule, then returns it as a DSN", async () => {
    recipients.rcptReplies.set("full@mailbox.test", { code: 450, text: "4.2.2 mailbox full" });
    await send(["full@mailbox.test"], "soft");
    const dsn = await dsnFor("full@mailbox.test");
    // Given up after its retries: failed for good (Haraka says 5.2.2), with the next hop's last temporary answer as the diagnostic.
    expect(dsn.report).toMatch(/Action: failed/);
    expect(dsn.report).toMatch(/Diagnostic-Code: smtp;450 4\.2\.2 mailbox full/);
  });
});
