import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SmtpSink, startPlatformProcess, type ArrivedMessage, type PlatformProcess } from "@emailsvc/testing";
import { GENEROUS_RATE_LIMIT_ENV } from "../../services/gateway/test/support/harness";
import { processCaller, sendCampaignToEveryone, untilCampaignSent } from "./support/crash-campaign";

// Issue 16, defect 9: two kill -9 in a row during one SMTP campaign sent two
// recipients twice. Over SMTP a duplicate can come from one place only: a
// crash after the relay's final 250 to DATA and before our durable record of
// it (RFC 5321 6.1: the relay took the message; nothing lets a client make
// that reply and its own write one step). Any other duplicate is a bug.
//
// `npm start` as a child process (embedded store, in-process bus; campaigns
// and delivery in their worker threads), live mode over a real SMTP server
// (the test sink), killed with SIGKILL several times during one campaign,
// twice in a row right after a start, and started again each time. Right
// after each kill the test reads delivery's datafile, which is exactly what
// the next start loads: the emails recorded `sent` at that kill. Then every
// recipient must have got the campaign, and every duplicate must be a message
// whose first copy the sink accepted before a kill while its email was not
// yet durably `sent` at that kill; every copy carries the email's one
// Message-ID. The number of such messages per kill is what the window costs.

const root = join(__dirname, "..", "..");
const ADMIN = "smtp-crash-admin-token-0123456789abcdef";
const RECIPIENTS = 240;

/** Delivery's emails as its datafile holds them right now (later lines win; NeDB's format). */
function durableEmails(dataDir: string): Map<string, { status: string }> {
  const file = join(dataDir, "delivery", "emails.db");
  const docs = new Map<string, { status: string }>();
  if (!existsSync(file)) return docs;
  for (const line of readFileSync(file, "utf8").split("\n")) {
    if (!line.trim()) continue;
    let doc: { _id?: string; status?: string; $$deleted?: boolean };
    try {
      doc = JSON.parse(line);
    } catch {
      continue; // a torn last line: the next start drops it too
    }
    if (!doc._id) continue;
    if (doc.$$deleted) docs.delete(doc._id);
    else docs.set(doc._id, { status: doc.status ?? "" });
  }
  return docs;
}

/** The email id in a Message-ID `<eml_…@domain>`. */
const emailIdOf = (m: ArrivedMessage) => /^<(eml_[0-9a-z]+)@/.exec(m.parsed.messageId ?? "")?.[1] ?? "";

describe("an SMTP campaign across repeated kill -9 (npm start's defaults)", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "campaign-smtp-crash-"));
  let sink: SmtpSink;
  let proc: PlatformProcess | undefined;
  let key = "";

  const start = () =>
    startPlatformProcess(root, {
      DATA_DIR: dataDir,
      ADMIN_TOKEN: ADMIN,
      TOKEN_SIGNING_KEYS: "k1:smtp-crash-signing-key-0123456789abcdef-012",
      EMAIL_PROVIDER: "smtp",
      SMTP_URL: sink.url(),
      EMAIL_FROM: "News <news@sender.example>",
      OUTBOX_SWEEP_INTERVAL_MS: "500",
      // About six seconds of sending: time to kill it midway, more than once.
      CAMPAIGN_RATE: "40/1s",
      ...GENEROUS_RATE_LIMIT_ENV,
    });

  const call = processCaller(() => proc, ADMIN, () => key);

  beforeAll(async () => {
    sink = await new SmtpSink().start();
    proc = await start();
  }, 120_000);
  afterAll(async () => {
    await proc?.stop();
    await sink?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("sends every recipient the campaign; a second copy only of a message the relay took in a kill's window", async () => {
    const { id } = await sendCampaignToEveryone(call, (k) => (key = k), { account: "SMTP crash", mode: "live", recipients: RECIPIENTS });

    // Each kill: when, how many messages had arrived at the relay by then, and the emails durably `sent` then.
    const kills: Array<{ at: number; arrived: number; durableSent: Set<string> }> = [];
    const killNow = async () => {
      const at = Date.now();
      await proc!.kill();
      kills.push({
        at,
        arrived: sink.messages.length,
        durableSent: new Set([...durableEmails(dataDir)].filter(([, e]) => e.status === "sent").map(([emailId]) => emailId)),
      });
      proc = await start();
    };
    // Kill once the relay has accepted a given number of messages: midway; then at once after the
    // start, while it recovers; then twice right after the first message of a start (the burst of
    // recipients the restart hands over again); then late in the campaign.
    for (const arrived of [40, 40, 41, 41, 120]) {
      for (let i = 0; i < 1200 && sink.acceptedCount < arrived; i++) await new Promise((resolve) => setTimeout(resolve, 25));
      expect(sink.acceptedCount).toBeGreaterThanOrEqual(arrived);
      await killNow();
    }

    const done = await untilCampaignSent(call, id);
    expect(done.status).toBe("sent");
    expect(done.counts).toMatchObject({ total: RECIPIENTS, sent: RECIPIENTS, pending: 0, queued: 0, failed: 0, skipped: 0 });

    // Everyone got it; every copy of one email carries its one Message-ID.
    const accepted = sink.messages.map((m, index) => ({ m, index })).filter(({ m }) => m.accepted);
    const byRecipient = new Map<string, Array<{ m: ArrivedMessage; index: number }>>();
    for (const a of accepted) {
      const to = a.m.envelope.to[0]!.toLowerCase();
      byRecipient.set(to, [...(byRecipient.get(to) ?? []), a]);
    }
    expect(byRecipient.size).toBe(RECIPIENTS);
    const outside: string[] = [];
    let duplicates = 0;
    for (const [to, copies] of byRecipient) {
      expect(new Set(copies.map((c) => c.m.parsed.messageId)).size).toBe(1);
      if (copies.length === 1) continue;
      duplicates += copies.length - 1;
      const emailId = emailIdOf(copies[0]!.m);
      // Each later copy needs a kill between it and the copy before, at which the email was not durably sent.
      for (let c = 1; c < copies.length; c++) {
        const between = kills.filter((k) => k.arrived > copies[c - 1]!.index && k.arrived <= copies[c]!.index);
        if (!between.some((k) => !k.durableSent.has(emailId))) outside.push(`${to} (${emailId}): copy ${c + 1} with no kill in the window of copy ${c}`);
      }
    }
    expect(outside).toEqual([]);
    // What the window cost here: the messages the relay had taken since the kill before and that were
    // not durably `sent` at a kill, and how long before the kill the relay had answered the earliest.
    const perKill = kills.map((k, i) => {
      const since = i === 0 ? 0 : kills[i - 1]!.arrived;
      const caught = accepted.filter(({ m, index }) => index >= since && index < k.arrived && !k.durableSent.has(emailIdOf(m)));
      const oldest = Math.max(0, ...caught.map(({ m }) => k.at - (m.answeredAt ?? k.at)));
      return caught.length === 0 ? "0" : `${caught.length} (answered ≤ ${oldest} ms before)`;
    });
    process.stdout.write(`campaign-smtp-crash: ${duplicates} duplicate(s) in ${kills.length} kills; in the window at each kill: ${perKill.join(", ")}\n`);
    // The emails' records: one per recipient, all sent.
    expect(new Set(accepted.map(({ m }) => emailIdOf(m))).size).toBe(RECIPIENTS);
  }, 600_000);
});
