import { createServer, type AddressInfo, type Server, type Socket } from "node:net";
import { simpleParser, type ParsedMail } from "mailparser";
import { SMTPServer, type SMTPServerSession } from "smtp-server";

// A real SMTP server for tests and benchmarks. By default (npm smtp-server)
// every message that arrives is kept, raw and parsed by mailparser; with
// `{ keep: false }` (benchmarks: 100,000 messages and more) nothing is parsed
// or kept and only the counts are, which is enough to tell lost and duplicate
// messages apart. Counting runs on a lean server of its own (below): a plain
// socket that speaks enough SMTP (EHLO with PIPELINING and CHUNKING, AUTH
// PLAIN, MAIL, RCPT, DATA, BDAT, RSET, NOOP, QUIT), so that a benchmark
// measures the client and not smtp-server's stream parsing. smtp-server has
// no CHUNKING: the lean server's `capture` keeps the raw bytes of what
// arrives there instead. Behaviours a relay can have are switched on per
// test: temporary (4xx) or permanent (5xx) replies, a slow reply to DATA
// (kept mode only), no PIPELINING, no CHUNKING, STARTTLS.

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
  /** The session was under TLS (implicit or STARTTLS) when the message arrived. */
  secure: boolean;
  /** The SMTP session (connection) it came on: sessionClosedAt() tells when that connection ended. */
  session: string;
}

/** A message as the lean server received it (`capture`): its bytes, unparsed. */
export interface CapturedMessage {
  /** The message's bytes: the BDAT chunks joined, or the data with its dot-stuffing undone and without the final "." line. */
  raw: Buffer;
  envelope: { from: string; to: string[] };
  /** How it came: BDAT chunks or DATA. */
  command: "BDAT" | "DATA";
  /** Answered 250 (else refused by a dataReplies reply, or by no recipient). */
  accepted: boolean;
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
  /** Offer PIPELINING in the EHLO reply (default true; RFC 2920). */
  pipelining?: boolean;
  /**
   * Offer CHUNKING (BDAT, RFC 3030) in the EHLO reply, as Postfix does
   * (default true). Lean server only (`keep: false`): smtp-server has none.
   */
  chunking?: boolean;
  /**
   * Keep the raw bytes of every message in `captured` (default false),
   * parsed by nobody: the lean server's counterpart of `keep` (which it
   * needs to be off), for a test of what a client sends with BDAT.
   */
  capture?: boolean;
  /**
   * Offer STARTTLS with smtp-server's built-in self-signed certificate
   * (default false; a client needs `tls_verify=false`). Kept mode only.
   */
  starttls?: boolean;
  /** The address it listens on (default 127.0.0.1): e.g. a Kubernetes node's address, for Pods to reach it. */
  host?: string;
}

export class SmtpSink {
  private server: SMTPServer | undefined;
  private lean: Server | undefined;
  private readonly leanSockets = new Set<Socket>();
  private readonly keep: boolean;
  private readonly pipelining: boolean;
  private readonly chunking: boolean;
  private readonly capture: boolean;
  private readonly starttls: boolean;
  private readonly host: string;
  /** Connections accepted since the start, in either mode (a client reusing connections opens few). */
  connections = 0;
  /**
   * Transactions whose RCPT TO (or DATA) had arrived before MAIL FROM was
   * answered: the client pipelined them (counting mode only).
   */
  pipelinedTransactions = 0;
  /** Messages that came with BDAT (counting mode only). */
  chunkedMessages = 0;
  /** The lean server's messages, raw, with `capture` (in the order their ends arrived). */
  readonly captured: CapturedMessage[] = [];
  /**
   * Transactions whose MAIL FROM came in the same read as the end of the
   * message before (the client wrote them together; counting mode only).
   */
  envelopesAfterData = 0;
  /** When each ended session's connection closed (ms since the epoch), by session id. */
  private readonly closedSessions = new Map<string, number>();
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
    this.pipelining = options.pipelining ?? true;
    this.chunking = options.chunking ?? true;
    this.capture = options.capture ?? false;
    this.starttls = options.starttls ?? false;
    this.host = options.host ?? "127.0.0.1";
    if (this.starttls && !this.keep) throw new Error("SmtpSink: starttls needs keep: true");
    if (this.capture && this.keep) throw new Error("SmtpSink: capture is the lean server's (keep: false)");
  }

  get accepted(): ArrivedMessage[] {
    return this.messages.filter((m) => m.accepted);
  }

  /** Messages whose envelope names this recipient (any case). */
  to(address: string): ArrivedMessage[] {
    const key = address.toLowerCase();
    return this.messages.filter((m) => m.envelope.to.some((r) => r.toLowerCase() === key));
  }

  /** `smtp://<host>:<port>` (host default 127.0.0.1), with credentials if given. */
  url(auth?: { user: string; pass: string }): string {
    const cred = auth ? `${encodeURIComponent(auth.user)}:${encodeURIComponent(auth.pass)}@` : "";
    return `smtp://${cred}${this.host}:${this.port}`;
  }

  /** Listens on its host, 127.0.0.1 unless given (port 0: any free one). */
  async start(port = 0): Promise<this> {
    if (!this.keep) return this.startLean(port);
    this.server = new SMTPServer({
      secure: false,
      // No STARTTLS with a self-signed certificate to trip over unless asked; plain AUTH allowed on loopback.
      disabledCommands: this.starttls ? [] : ["STARTTLS"],
      hidePIPELINING: !this.pipelining,
      onConnect: (_session, callback) => {
        this.connections += 1;
        callback();
      },
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
        this.closedSessions.set(session.id, Date.now());
      },
    });
    await new Promise<void>((resolve, reject) => {
      this.server!.once("error", reject);
      this.server!.listen(port, this.host, () => resolve());
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
        secure: session.secure,
        session: session.id,
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

  /**
   * When the connection of `session` (an ArrivedMessage's) closed, if it has.
   * A client killed mid-session may have written messages the sink reads only
   * after the kill: they are answered (accepted) before the sink sees the
   * close, though the client never got the answer.
   */
  sessionClosedAt(session: string): number | undefined {
    return this.closedSessions.get(session);
  }

  private count(session: SMTPServerSession): void {
    this.countRecipients(session.envelope.rcptTo.map((r) => r.address));
  }

  private countRecipients(recipients: string[]): void {
    this.acceptedCount += 1;
    for (const address of recipients) {
      const key = address.toLowerCase();
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

  /** The counting mode's server: a plain socket per client, see LeanSession. */
  private async startLean(port: number): Promise<this> {
    const server = createServer((socket) => {
      this.connections += 1;
      this.leanSockets.add(socket);
      socket.on("close", () => this.leanSockets.delete(socket));
      socket.on("error", (err) => this.connectionErrors.push(err.message));
      new LeanSession(this, socket, this.pipelining, this.chunking, this.capture);
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, this.host, () => resolve());
    });
    this.lean = server;
    this.port = (server.address() as AddressInfo).port;
    return this;
  }

  /** The lean server's end of a message (DATA or BDAT LAST): the reply (a dataReplies one, or 250 and counted). */
  leanData(recipients: string[]): string {
    const reply = recipients.map((r) => this.dataReplies.get(r.toLowerCase())?.shift()).find((r) => r !== undefined);
    if (reply && reply.code >= 400) return `${reply.code} ${reply.text}`;
    this.countRecipients(recipients);
    return "250 OK: queued";
  }

  async close(): Promise<void> {
    const lean = this.lean;
    if (lean) {
      this.lean = undefined;
      for (const socket of this.leanSockets) socket.destroy();
      await new Promise<void>((resolve) => lean.close(() => resolve()));
    }
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    for (const finish of this.delays) finish();
    this.delays.clear();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

/**
 * One client of the counting server: commands read line by line, the data
 * skipped up to its end ("." alone on a line) or a BDAT chunk's bytes
 * counted off, the replies to everything that arrived in one chunk written
 * in one go (so a pipelining client gets its three replies together). About
 * 2 µs of work per message beside the socket's own.
 */
class LeanSession {
  private buffered = "";
  private inData = false;
  /** Nothing of the data read yet (so a "." line here ends an empty message). */
  private dataStart = false;
  /** The BDAT chunk being read: its bytes still to come, its size, and whether it is the message's last. */
  private chunk: { left: number; size: number; last: boolean } | undefined;
  private from: string | undefined;
  private recipients: string[] = [];
  /** The message's bytes so far (with `capture`), latin1: one character a byte. */
  private content = "";

  constructor(
    private readonly sink: SmtpSink,
    private readonly socket: Socket,
    private readonly pipelining: boolean,
    private readonly chunking: boolean,
    private readonly capture: boolean,
  ) {
    socket.setNoDelay(true);
    socket.on("data", (chunk: Buffer) => this.onData(chunk));
    socket.write("220 sink ESMTP ready\r\n");
  }

  private onData(chunk: Buffer): void {
    this.buffered += chunk.toString("latin1");
    let replies = "";
    let at = 0;
    let dataEnded = false;
    for (;;) {
      if (this.chunk) {
        const taken = Math.min(this.chunk.left, this.buffered.length - at);
        if (this.capture) this.content += this.buffered.slice(at, at + taken);
        at += taken;
        this.chunk.left -= taken;
        if (this.chunk.left > 0) {
          this.buffered = "";
          at = 0;
          break;
        }
        const { size, last } = this.chunk;
        this.chunk = undefined;
        // A transaction without a recipient (its MAIL or RCPT refused): its chunks read and dropped, refused (RFC 3030 2).
        if (this.recipients.length === 0) {
          replies += "554 5.5.1 no valid recipients\r\n";
          if (last) {
            this.endMessage();
            dataEnded = true;
          }
          continue;
        }
        if (!last) {
          replies += `250 2.0.0 ${size} octets received\r\n`;
          continue;
        }
        this.sink.chunkedMessages += 1;
        replies += `${this.finish("BDAT")}\r\n`;
        dataEnded = true;
        continue;
      }
      if (this.inData) {
        // The data ends with CRLF "." CRLF; a message of nothing but the end starts with ".".
        let after = -1;
        if (this.dataStart && this.buffered.startsWith(".\r\n", at)) after = at + 3;
        else {
          const end = this.buffered.indexOf("\r\n.\r\n", at);
          if (end >= 0) after = end + 5;
        }
        if (after < 0) {
          // Not there yet: keep only what could be the start of the end (and, with `capture`, what came before it).
          if (this.buffered.length - at >= 3) this.dataStart = false;
          const kept = this.dataStart ? at : Math.max(at, this.buffered.length - 4);
          if (this.capture) this.content += this.buffered.slice(at, kept);
          this.buffered = this.buffered.slice(kept);
          at = 0;
          break;
        }
        // The CRLF before the "." ends the message's last line: it is the message's.
        if (this.capture) this.content += this.buffered.slice(at, after - 3);
        at = after;
        dataEnded = true;
        this.inData = false;
        replies += `${this.finish("DATA")}\r\n`;
        continue;
      }
      const end = this.buffered.indexOf("\r\n", at);
      if (end < 0) {
        this.buffered = this.buffered.slice(at);
        at = 0;
        break;
      }
      const line = this.buffered.slice(at, end);
      at = end + 2;
      const reply = this.command(line, at < this.buffered.length, dataEnded);
      if (reply === undefined) {
        this.socket.end(`${replies}221 bye\r\n`);
        return;
      }
      replies += reply;
    }
    if (replies) this.socket.write(replies);
  }

  /** The reply to a message's end (DATA's "." or BDAT LAST), the message captured with `capture`; the transaction ends. */
  private finish(command: "BDAT" | "DATA"): string {
    const reply = this.sink.leanData(this.recipients);
    if (this.capture) {
      // DATA's dot-stuffing undone: a line starting with "." came with one more (RFC 5321 4.5.2).
      const raw = command === "DATA" ? this.content.replace(/(^|\r\n)\./g, "$1") : this.content;
      this.sink.captured.push({ raw: Buffer.from(raw, "latin1"), envelope: { from: this.from ?? "", to: this.recipients }, command, accepted: reply.startsWith("250") });
    }
    this.endMessage();
    return reply;
  }

  private endMessage(): void {
    this.from = undefined;
    this.recipients = [];
    this.content = "";
  }

  /**
   * The reply (with CRLF) to one command line; undefined for QUIT, and ""
   * for BDAT (answered once its chunk is read). `more`: the client sent more
   * before this reply; `afterData`: a message's data ended earlier in the same read.
   */
  private command(line: string, more: boolean, afterData: boolean): string | undefined {
    const verb = line.slice(0, 4).toUpperCase();
    switch (verb) {
      case "EHLO":
        return `250-sink\r\n${this.pipelining ? "250-PIPELINING\r\n" : ""}${this.chunking ? "250-CHUNKING\r\n" : ""}250-8BITMIME\r\n250-SMTPUTF8\r\n250 AUTH PLAIN\r\n`;
      case "HELO":
        return "250 sink\r\n";
      case "AUTH":
        return "235 accepted\r\n";
      case "MAIL": {
        if (more) this.sink.pipelinedTransactions += 1;
        if (afterData) this.sink.envelopesAfterData += 1;
        const address = /<([^>]*)>/.exec(line);
        this.from = address ? address[1]! : "";
        this.recipients = [];
        this.content = "";
        return "250 sender ok\r\n";
      }
      case "RCPT": {
        const address = /<([^>]*)>/.exec(line)?.[1] ?? "";
        if (this.from === undefined) return "503 MAIL first\r\n";
        const refusal = this.sink.rcptReplies.get(address.toLowerCase());
        if (refusal) return `${refusal.code} ${refusal.text}\r\n`;
        this.recipients.push(address);
        return "250 recipient ok\r\n";
      }
      case "DATA":
        if (this.recipients.length === 0) return "554 no valid recipients\r\n";
        this.inData = true;
        this.dataStart = true;
        return "354 go ahead\r\n";
      case "BDAT": {
        if (!this.chunking) return "502 not implemented\r\n";
        const chunk = /^BDAT (\d+)( LAST)?$/i.exec(line);
        if (!chunk) return "501 5.5.4 BDAT needs a size\r\n";
        const size = Number(chunk[1]);
        this.chunk = { left: size, size, last: chunk[2] !== undefined };
        return "";
      }
      case "RSET":
        this.endMessage();
        return "250 reset\r\n";
      case "NOOP":
        return "250 ok\r\n";
      case "QUIT":
        return undefined;
      default:
        return "502 not implemented\r\n";
    }
  }
}
