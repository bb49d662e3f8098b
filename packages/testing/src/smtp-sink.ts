import type { AddressInfo } from "node:net";
import { simpleParser, type ParsedMail } from "mailparser";
import { SMTPServer, type SMTPServerSession } from "smtp-server";

// A real SMTP server for tests and benchmarks (npm smtp-server). By default
// every message that arrives is kept, raw and parsed by mailparser; with
// `{ keep: false }` (benchmarks: 100,000 messages and more) nothing is parsed
// or kept and only the counts are, which is enough to tell lost and duplicate
// messages apart. Behaviours a relay can have are switched on per test:
// temporary (4xx) or permanent (5xx) replies, a slow reply to DATA.

export interface ArrivedMessage {
  raw: string;
  parsed: ParsedMail;
  envelope: { from: string; to: string[] };
  /**
   * True when the server answered 250 to DATA on a connection still open: only
   * then has it taken responsibility for the message (RFC 5321 6.1). A message
   * whose client went away before the reply is received but not accepted.
   */
  accepted: boolean;
  /** When the sink answered DATA (ms since the epoch): for an accepted message, when the relay took responsibility. */
  answeredAt?: number;
  user: string | undefined;
}

export interface SinkReply {
  code: number;
  text: string;
}

export interface SmtpSinkOptions {
  /**
   * Keep every message, raw and parsed (default true). False is the
   * benchmarks' counting mode: the data is read and dropped, `messages`
   * stays empty, and only `acceptedCount` and `recipientCounts` grow.
   */
  keep?: boolean;
}

export class SmtpSink {
  private server: SMTPServer | undefined;
  private readonly keep: boolean;
  private readonly closedSessions = new Set<string>();
  /** Every message whose DATA arrived in full, accepted or not (empty with `keep: false`). */
  readonly messages: ArrivedMessage[] = [];
  /** Messages accepted (250 to DATA on a connection still open), in either mode. */
  acceptedCount = 0;
  /**
   * Accepted messages per envelope recipient (lower case), in either mode: a
   * count above 1 is a duplicate, an address missing is a lost message.
   */
  readonly recipientCounts = new Map<string, number>();
  /** Waiters of whenAccepted(), resolved as acceptedCount reaches their count. */
  private acceptedWaiters: Array<{ count: number; wake: () => void }> = [];
  /** Replies to DATA for the next messages to an address (lower case), used up one per message (e.g. two 451s). */
  readonly dataReplies = new Map<string, SinkReply[]>();
  /** RCPT TO of these addresses (lower case) is refused with the reply (e.g. 550 user unknown). */
  readonly rcptReplies = new Map<string, SinkReply>();
  /** Waits this long before answering DATA (a slow relay, or one a client gives up on). */
  dataDelayMs = 0;
  /** Resolves when a DATA has arrived in full and waits for its reply (with dataDelayMs). */
  private dataArrived: Array<() => void> = [];
  /** Replies held back by dataDelayMs; close() answers them at once. */
  private readonly delays = new Set<() => void>();
  port = 0;
  /** Errors of client connections after the start (e.g. ECONNRESET of a client that was killed). */
  readonly connectionErrors: string[] = [];

  constructor(options: SmtpSinkOptions = {}) {
    this.keep = options.keep ?? true;
  }

  get accepted(): ArrivedMessage[] {
    return this.messages.filter((m) => m.accepted);
  }

  /** Messages whose envelope names this recipient (any case). */
  to(address: string): ArrivedMessage[] {
    const key = address.toLowerCase();
    return this.messages.filter((m) => m.envelope.to.some((r) => r.toLowerCase() === key));
  }

  /** `smtp://127.0.0.1:<port>`, with credentials if given. */
  url(auth?: { user: string; pass: string }): string {
    const cred = auth ? `${encodeURIComponent(auth.user)}:${encodeURIComponent(auth.pass)}@` : "";
    return `smtp://${cred}127.0.0.1:${this.port}`;
  }

  /** Listens on 127.0.0.1 (port 0: any free one). */
  async start(port = 0): Promise<this> {
    this.server = new SMTPServer({
      secure: false,
      // No STARTTLS with a self-signed certificate to trip over; plain AUTH allowed on loopback.
      disabledCommands: ["STARTTLS"],
      authOptional: true,
      allowInsecureAuth: true,
      logger: false,
      onAuth: (auth, _session, callback) => callback(null, { user: auth.username }),
      onRcptTo: (address, _session, callback) => {
        const reply = this.rcptReplies.get(address.address.toLowerCase());
        if (reply) return callback(Object.assign(new Error(reply.text), { responseCode: reply.code }));
        callback();
      },
      onData: (stream, session, callback) => {
        if (!this.keep) {
          stream.on("end", () => void this.finishData(undefined, session, callback));
          stream.resume(); // read and dropped
          return;
        }
        const chunks: Buffer[] = [];
        stream.on("data", (c: Buffer) => chunks.push(c));
        stream.on("end", () => {
          void this.finishData(Buffer.concat(chunks).toString("utf8"), session, callback);
        });
      },
      onClose: (session) => {
        this.closedSessions.add(session.id);
      },
    });
    await new Promise<void>((resolve, reject) => {
      this.server!.once("error", reject);
      this.server!.listen(port, "127.0.0.1", () => resolve());
    });
    // A client killed mid-session (kill -9 tests) resets its connection: a
    // relay sees that and goes on, and so does the sink (kept for a look).
    this.server.on("error", (err: Error) => this.connectionErrors.push(err.message));
    this.port = (this.server.server.address() as AddressInfo).port;
    return this;
  }

  private async finishData(
    raw: string | undefined,
    session: SMTPServerSession,
    callback: (err?: Error | null, message?: string) => void,
  ): Promise<void> {
    const reply = session.envelope.rcptTo.map((r) => this.dataReplies.get(r.address.toLowerCase())?.shift()).find((r) => r !== undefined);
    let message: ArrivedMessage | undefined;
    if (raw !== undefined) {
      message = {
        raw,
        parsed: await simpleParser(raw),
        envelope: {
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
          to: session.envelope.rcptTo.map((r) => r.address),
        },
        accepted: false,
        user: typeof session.user === "string" ? session.user : undefined,
      };
      this.messages.push(message);
    }
    if (this.dataArrived.length > 0) {
      const waiting = this.dataArrived;
      this.dataArrived = [];
      waiting.forEach((wake) => wake());
    }
    if (this.dataDelayMs > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          this.delays.delete(finish);
          resolve();
        }, this.dataDelayMs);
        const finish = () => {
          clearTimeout(timer);
          resolve();
        };
        this.delays.add(finish);
      });
    }
    if (reply && reply.code >= 400) {
      callback(Object.assign(new Error(reply.text), { responseCode: reply.code }));
      return;
    }
    const accepted = !this.closedSessions.has(session.id);
    if (message) {
      message.accepted = accepted;
      message.answeredAt = Date.now();
    }
    if (accepted) this.count(session);
    callback(null, "OK: queued");
  }

  private count(session: SMTPServerSession): void {
    this.acceptedCount += 1;
    for (const r of session.envelope.rcptTo) {
      const key = r.address.toLowerCase();
      this.recipientCounts.set(key, (this.recipientCounts.get(key) ?? 0) + 1);
    }
    if (this.acceptedWaiters.length > 0) {
      const due = this.acceptedWaiters.filter((w) => w.count <= this.acceptedCount);
      if (due.length > 0) {
        this.acceptedWaiters = this.acceptedWaiters.filter((w) => w.count > this.acceptedCount);
        due.forEach((w) => w.wake());
      }
    }
  }

  /** Resolves once `count` messages in all have been accepted (at once if they have). */
  whenAccepted(count: number): Promise<void> {
    if (this.acceptedCount >= count) return Promise.resolve();
    return new Promise((resolve) => this.acceptedWaiters.push({ count, wake: resolve }));
  }

  /** Answers every DATA held back by dataDelayMs now (after a client was killed mid-hand-off). */
  releaseHeld(): void {
    for (const finish of this.delays) finish();
    this.delays.clear();
  }

  /** Resolves once the next DATA has arrived in full (before it is answered). */
  nextData(): Promise<void> {
    return new Promise((resolve) => this.dataArrived.push(resolve));
  }

  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    for (const finish of this.delays) finish();
    this.delays.clear();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
