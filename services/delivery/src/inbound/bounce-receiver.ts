import type { AddressInfo } from "node:net";
import { SMTPServer, type SMTPServerAddress, type SMTPServerDataStream, type SMTPServerSession } from "smtp-server";
import type { KeyRing } from "@emailsvc/tokens";
import type { Logger } from "@emailsvc/telemetry";
import { MAX_REPORT_BYTES, readFeedbackReport, type FeedbackReport } from "../domain/feedback-report.js";
import { emailIdOfReturnPath } from "../domain/return-path.js";

// The bounce receiver: an SMTP server (npm smtp-server) on a port of its own
// (BOUNCE_SMTP_PORT), the MX of the return-path hosts, where receiving
// servers send what comes back: delivery status notifications to an email's
// return path, and complaints from the feedback loops an operator registered
// (to `fbl@` any return-path host). It accepts a recipient only when it is a
// return path this platform signed (emailIdOfReturnPath), or the feedback
// address, so that it is no open relay and a forged or guessed address is
// refused at RCPT; it reads at most MAX_REPORT_BYTES of a message, and hands
// each report with the emails it names to `apply`. Nothing it is sent reaches
// the logs but counts and reasons: a report carries addresses.

/** A report and the email it came back to (from the return path it was sent to); `emailId` is undefined for a complaint sent to the feedback address. */
export interface ArrivedReport {
  emailId: string | undefined;
  report: FeedbackReport;
}

export interface BounceReceiverOptions {
  port: number;
  host: string;
  /** The keys return paths are signed with (TOKEN_SIGNING_KEYS). */
  keys: KeyRing;
  /** Applies one report; a rejection makes the sender retry later (451), as a crash would. */
  apply(arrived: ArrivedReport): Promise<void>;
  logger: Logger;
}

export interface RunningBounceReceiver {
  port: number;
  close(): Promise<void>;
}

/** The local part complaints from feedback loops are sent to, at any return-path host. */
export const FEEDBACK_LOCAL_PART = "fbl";

function smtpError(code: number, text: string): Error {
  return Object.assign(new Error(text), { responseCode: code });
}

/** What a recipient of the receiver is: an email's return path, the feedback address, or nothing we accept. */
function recipientKind(keys: KeyRing, address: string): { emailId: string } | "feedback" | undefined {
  const emailId = emailIdOfReturnPath(keys, address);
  if (emailId) return { emailId };
  return address.toLowerCase().startsWith(`${FEEDBACK_LOCAL_PART}@`) ? "feedback" : undefined;
}

/** Reads the message up to the limit (the rest is drained, not kept). */
function readCapped(stream: SMTPServerDataStream): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    stream.on("data", (chunk: Buffer) => {
      if (size >= MAX_REPORT_BYTES) return;
      chunks.push(chunk);
      size += chunk.length;
    });
    stream.on("end", () => resolve(Buffer.concat(chunks).subarray(0, MAX_REPORT_BYTES)));
    stream.on("error", reject);
  });
}

export async function startBounceReceiver(options: BounceReceiverOptions): Promise<RunningBounceReceiver> {
  const { keys, logger } = options;
  const server = new SMTPServer({
    name: "bounces",
    banner: "bounce receiver",
    authOptional: true,
    disabledCommands: ["AUTH", "STARTTLS"],
    // A report is small; the returned message beside it is read up to the cap and dropped.
    size: 10 * MAX_REPORT_BYTES,
    logger: false,
    onRcptTo(address: SMTPServerAddress, _session: SMTPServerSession, callback: (err?: Error | null) => void) {
      if (!recipientKind(keys, address.address)) return callback(smtpError(550, "5.1.1 no such mailbox here"));
      callback();
    },
    onData(stream: SMTPServerDataStream, session: SMTPServerSession, callback: (err?: Error | null) => void) {
      void (async () => {
        const raw = await readCapped(stream);
        const report = readFeedbackReport(raw);
        if (report.kind === "unrecognised") {
          // An auto-reply or a report we cannot read: taken, so that it is not sent again, and dropped.
          logger.info({ reason: report.reason }, "bounce receiver: dropped a message that is no report");
          return;
        }
        const named = session.envelope.rcptTo.map((r) => recipientKind(keys, r.address));
        const emailIds = [...new Set(named.flatMap((n) => (n && n !== "feedback" ? [n.emailId] : [])))];
        // A DSN names the email by the return path it came to; a complaint to the feedback address by the return path it reports.
        const arrivals: ArrivedReport[] = emailIds.length > 0 ? emailIds.map((emailId) => ({ emailId, report })) : [{ emailId: undefined, report }];
        for (const arrived of arrivals) await options.apply(arrived);
      })().then(
        () => callback(),
        (err: unknown) => {
          logger.warn({ err: err instanceof Error ? err.message : String(err) }, "bounce receiver: a report was not applied; the sender is asked to retry");
          callback(smtpError(451, "4.3.0 try again later"));
        },
      );
    },
  });
  server.on("error", (err) => logger.warn({ err: err.message }, "bounce receiver: connection error"));
  await new Promise<void>((resolve, reject) => {
    server.server.once("error", reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const port = (server.server.address() as AddressInfo).port;
  logger.info({ port, host: options.host }, "bounce receiver listening");
  return {
    port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
