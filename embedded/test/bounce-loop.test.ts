import { createTransport } from "nodemailer";
import { Webhook } from "standardwebhooks";
import { freePort, SmtpSink, startHaraka, type HarakaRelay } from "@emailsvc/testing";
import { GENEROUS_RATE_LIMIT_ENV } from "../../services/gateway/test/support/harness";
import { Receiver } from "../../services/webhooks/test/receiver";
import { allItems, eventually, startTestPlatform, type TestPlatform } from "./support/platform-client";

// The loop of issue 17 over a real relay: the platform sends through Haraka,
// which takes each message (250), meets the next hop's answer, and sends a
// real DSN to the message's return path, the platform's bounce receiver
// (BOUNCE_SMTP_PORT). A hard bounce and a soft bounce the relay gave up on
// reach the email's status, the subscriber, the suppression list and a signed
// webhook; a complaint (ARF, as a feedback loop sends it) does too; a soft
// bounce the relay recovers from changes nothing; the next
// campaign skips the suppressed addresses with the reason; a forged return
// path is refused at RCPT.

const MJML = "<mjml><mj-body><mj-section><mj-column><mj-text>Hello</mj-text></mj-column></mj-section></mj-body></mjml>";
const BOUNCE_HOST = "bounces.platform.test";

interface EmailJson {
  id: string;
  status: string;
  bounce: { type: string; diagnostic: string } | null;
  history: Array<{ status: string }>;
}

describe("bounces and complaints come back over a real relay", () => {
  let t: TestPlatform;
  let relay: HarakaRelay;
  let receiver: Receiver;
  let secret: string;
  let bouncePort: number;
  const nextHop = new SmtpSink();

  beforeAll(async () => {
    await nextHop.start();
    receiver = await Receiver.start();
    bouncePort = await freePort();
    relay = await startHaraka({ routes: { [BOUNCE_HOST]: { port: bouncePort }, "*": { port: nextHop.port } }, tempFailIntervals: "5s" });
    t = await startTestPlatform("bounce-loop", {
      ...GENEROUS_RATE_LIMIT_ENV,
      EMAIL_PROVIDER: "smtp",
      SMTP_URL: relay.url,
      BOUNCE_SMTP_PORT: String(bouncePort),
      RETURN_PATH_HOST: BOUNCE_HOST,
      OUTBOX_SWEEP_INTERVAL_MS: "200",
      WEBHOOK_ALLOW_HTTP: "true",
      WEBHOOK_ALLOW_PRIVATE_RANGES: "127.0.0.0/8",
      WEBHOOK_RETRY_DELAYS_SECONDS: "1",
    });
  }, 300_000);
  afterAll(async () => {
    await t?.close();
    await relay?.stop();
    await receiver?.close();
    await nextHop.close();
  });

  let live: string;
  const call = (method: string, path: string, body?: unknown) => t.call(method, path, { key: live, ...(body === undefined ? {} : { body }) });
  const email = async (id: string) => (await call("GET", `/api/v1/emails/${id}`)).body as EmailJson;
  const subscriberStatus = async (id: string) => (await call("GET", `/api/v1/subscribers/${id}`)).body.status as string;

  it("takes each report to the email, the subscriber, the suppression list and a signed webhook", async () => {
    live = (await t.call("POST", `/admin/v1/accounts/${t.accountId}/api-keys`, { admin: true, body: { mode: "live" } })).body.key;
    const hook = await call("POST", "/api/v1/webhooks", { url: `http://127.0.0.1:${receiver.port}/mail`, events: ["email.bounced", "email.complained"] });
    expect(hook.status).toBe(201);
    secret = hook.body.secret;
    expect((await call("POST", "/api/v1/templates", { name: "news", slug: "news", subject: "News", category: "marketing", mjml_content: MJML })).status).toBe(201);
    expect((await call("POST", "/api/v1/tags", { name: "readers" })).status).toBe(201);
    const people: Record<string, string> = {};
    for (const name of ["gone", "full", "annoyed", "fine", "later"]) {
      const res = await call("POST", "/api/v1/subscribers", { email: `${name}@mailbox.test`, tags: ["readers"] });
      expect(res.status).toBe(201);
      people[name] = res.body.id;
    }
    nextHop.rcptReplies.set("gone@mailbox.test", { code: 550, text: "5.1.1 <gone@mailbox.test>: user unknown" });
    nextHop.rcptReplies.set("full@mailbox.test", { code: 452, text: "4.2.2 mailbox full" });
    // A soft bounce that recovers: the next hop says "not now" once; the relay tries again 5 s later and it is taken.
    nextHop.dataReplies.set("later@mailbox.test", [{ code: 451, text: "4.3.0 try again later" }]);
    const sent: Record<string, string> = {};
    for (const name of Object.keys(people)) {
      const res = await call("POST", "/api/v1/emails/send", { template_slug: "news", to: `${name}@mailbox.test` });
      expect(res.status).toBe(202);
      sent[name] = res.body.id;
    }

    // The relay took every message (sent); what it could not deliver comes back as DSNs.
    const hard = await eventually(() => email(sent.gone!), (e) => e.status === "bounced", 600);
    expect(hard.bounce).toEqual({ type: "hard", diagnostic: expect.stringMatching(/^550 5\.1\.1 .*user unknown/) });
    expect(hard.history.map((h) => h.status)).toEqual(["queued", "sent", "bounced"]);
    const soft = await eventually(() => email(sent.full!), (e) => e.status === "bounced", 600);
    expect(soft.bounce).toEqual({ type: "soft", diagnostic: "452 4.2.2 mailbox full" });

    // A complaint, as a mailbox provider's feedback loop sends it: to fbl@, naming the return path of the message.
    const annoyedMessage = nextHop.messages.find((m) => m.envelope.to.includes("annoyed@mailbox.test"))!;
    expect(annoyedMessage.envelope.from).toMatch(new RegExp(`^b\\+${sent.annoyed}\\.[0-9a-f]{16}@${BOUNCE_HOST.replace(/\./g, "\\.")}$`));
    await complain(annoyedMessage.envelope.from, "annoyed@mailbox.test");
    await eventually(() => email(sent.annoyed!), (e) => e.status === "complained", 600);

    // The subscribers: a hard bounce and a complaint move them; one soft bounce does not (three in 30 days would).
    expect(await eventually(() => subscriberStatus(people.gone!), (s) => s === "bounced")).toBe("bounced");
    expect(await eventually(() => subscriberStatus(people.annoyed!), (s) => s === "complained")).toBe("complained");
    expect(await subscriberStatus(people.full!)).toBe("active");
    expect((await email(sent.fine!)).status).toBe("sent");
    // The recovered one reached its mailbox at the relay's second try, and nothing came back about it.
    expect(await eventually(async () => nextHop.messages.filter((m) => m.envelope.to.includes("later@mailbox.test") && m.accepted).length, (n) => n >= 1, 600)).toBe(1);
    expect((await email(sent.later!)).status).toBe("sent");
    expect(await subscriberStatus(people.later!)).toBe("active");
    const listed = await eventually(
      () => allItems<{ email: string; reason: string; email_id: string | null }>((path) => call("GET", path), "/api/v1/suppressions"),
      (items) => items.length >= 2,
    );
    expect(listed.map((s) => [s.email, s.reason]).sort()).toEqual([
      ["annoyed@mailbox.test", "complaint"],
      ["gone@mailbox.test", "hard_bounce"],
    ]);

    // Signed webhooks the reference library verifies, one per report.
    const hooks = await eventually(async () => receiver.to("/mail"), (list) => list.length >= 3);
    const bodies = hooks.map((h) => new Webhook(secret).verify(h.body, h.headers) as { type: string; data: { email_id: string } });
    expect(bodies.map((b) => `${b.type} ${b.data.email_id}`).sort()).toEqual(
      [`email.bounced ${sent.gone}`, `email.bounced ${sent.full}`, `email.complained ${sent.annoyed}`].sort(),
    );

    // The next campaign to the tag: the bounced and the complained are no longer in its audience; the others get it.
    const templateId = (await call("GET", "/api/v1/templates?limit=10")).body.items[0].id as string;
    const campaign = await call("POST", "/api/v1/campaigns", { name: "next", template_id: templateId, tag_filter: { include_tags: ["readers"], match: "any" } });
    expect(campaign.status).toBe(201);
    expect((await call("POST", `/api/v1/campaigns/${campaign.body.id}/send`)).body.total_recipients).toBe(3);
    const done = await eventually(async () => (await call("GET", `/api/v1/campaigns/${campaign.body.id}`)).body, (c) => c.status === "sent", 600);
    expect(done.counts).toMatchObject({ total: 3 });
    // The relay hands the campaign's mail on by itself: fine's second message arrives; the listed got nothing more.
    const received = (name: string) => nextHop.messages.filter((m) => m.envelope.to.includes(`${name}@mailbox.test`)).length;
    expect(await eventually(async () => received("fine"), (n) => n >= 2, 600)).toBe(2);
    expect({ gone: received("gone"), annoyed: received("annoyed") }).toEqual({ gone: 0, annoyed: 1 }); // gone's RCPT was refused: no message
  });

  it("refuses a forged or foreign return path at RCPT, so it is no open relay", async () => {
    const transport = createTransport({ host: "127.0.0.1", port: bouncePort, secure: false, ignoreTLS: true });
    try {
      for (const to of [`b+eml_01jbz6k8m2n3p4q5r6s7t8v9wx.0000000000000000@${BOUNCE_HOST}`, "someone@example.com"]) {
        await expect(transport.sendMail({ envelope: { from: "", to: [to] }, raw: "Subject: x\r\n\r\nx\r\n" })).rejects.toMatchObject({ responseCode: 550 });
      }
    } finally {
      transport.close();
    }
  });

  async function complain(returnPath: string, recipient: string): Promise<void> {
    const report = [
      "From: fbl@mailbox.test",
      `To: fbl@${BOUNCE_HOST}`,
      "Subject: complaint",
      "MIME-Version: 1.0",
      'Content-Type: multipart/report; report-type=feedback-report; boundary="r"',
      "",
      "--r",
      "Content-Type: text/plain",
      "",
      "Marked as spam.",
      "--r",
      "Content-Type: message/feedback-report",
      "",
      "Feedback-Type: abuse",
      "User-Agent: test-fbl/1",
      "Version: 1",
      `Original-Mail-From: <${returnPath}>`,
      `Original-Rcpt-To: <${recipient}>`,
      "",
      "--r--",
      "",
    ].join("\r\n");
    const transport = createTransport({ host: "127.0.0.1", port: bouncePort, secure: false, ignoreTLS: true });
    try {
      await transport.sendMail({ envelope: { from: "", to: [`fbl@${BOUNCE_HOST}`] }, raw: report });
    } finally {
      transport.close();
    }
  }
});
