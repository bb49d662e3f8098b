import { connect as netConnect, isIP, type Socket } from "node:net";
import { hostname } from "node:os";
import { connect as tlsConnect, type TLSSocket } from "node:tls";
import type { SmtpSettings, SmtpTimeouts } from "./smtp.js";

// An SMTP client (RFC 5321) for one relay: a pool of connections opened
// lazily and reused for many messages, each connection one transaction at a
// time, with PIPELINING (RFC 2920) when the relay offers it: MAIL FROM,
// RCPT TO and DATA go out in one write and their replies are matched in
// order, so a message costs two round trips instead of four; and when
// another message waits for a connection, its envelope goes out in the same
// write as the end of this one's data (RFC 2920 allows commands after the
// data in one group), which halves the writes of a busy pool. When the relay
// offers CHUNKING (RFC 3030) beside PIPELINING, a message goes as BDAT with
// its size instead of DATA: nothing then waits for a 354, so a whole
// transaction (MAIL, RCPT, BDAT <size> LAST and the message) is written at
// once, and a connection carries up to CHUNKED_IN_FLIGHT of them before their
// replies, the transactions written in one loop turn leaving in one write.
// Failures are SmtpError, shaped as classifySmtpError (smtp.ts) reads them.

/** Where the relay is and how long to wait for it: SMTP_URL's settings and the timeouts. */
export type SmtpClientOptions = SmtpSettings & SmtpTimeouts;

/** What went wrong, in the fields classifySmtpError reads (those of nodemailer's errors, which it was written for). */
export interface SmtpErrorFields {
  /** ECONNECTION (connection lost or refused), ESOCKET, EDNS, ETLS, EAUTH, ETIMEDOUT, EABORT, EENVELOPE, EMESSAGE, EPROTOCOL. */
  code?: string;
  /** The command the reply answered (`MAIL FROM`, `RCPT TO`, `DATA`). */
  command?: string;
  responseCode?: number;
  /** The whole reply, code and text (may name the recipient: scrubbed by the classifier). */
  response?: string;
  /** GREETING_TIMEOUT, CONNECTION_TIMEOUT or SOCKET_TIMEOUT. */
  timeoutType?: string;
}

export class SmtpError extends Error implements SmtpErrorFields {
  code?: string;
  command?: string;
  responseCode?: number;
  response?: string;
  timeoutType?: string;

  constructor(message: string, fields: SmtpErrorFields) {
    super(message);
    this.name = "SmtpError";
    Object.assign(this, fields);
  }
}

interface Reply {
  code: number;
  /** Every line, joined by newlines, codes included (`250-…\n250 …`). */
  text: string;
  lines: string[];
}

type ReplyWaiter = { resolve: (reply: Reply) => void; reject: (err: Error) => void };

/** The EHLO name: the host's name when it is a domain, else the loopback literal (as nodemailer does). */
function ehloName(): string {
  const name = hostname();
  return name.includes(".") && /^[A-Za-z0-9.-]+$/.test(name) ? name : "[127.0.0.1]";
}

/** One connection: a socket, a reply reader and the queue of replies waited for, in the order commands were written. */
class SmtpConnection {
  private socket: Socket | TLSSocket | undefined;
  private buffered = "";
  private pendingLines: string[] = [];
  private readonly waiters: ReplyWaiter[] = [];
  /** The connection can no longer be used (closed, errored, timed out, a 421, or a transaction abandoned). */
  broken = false;
  /** Set once the connection has been used for a transaction: a failure before any reply may then be retried on a fresh one. */
  used = false;
  /** BDAT transactions written and not yet answered in full. */
  inFlight = 0;
  /** Out of the pool with CHUNKED_IN_FLIGHT transactions in flight: the one answered first gives it back. */
  full = false;
  /** The socket is corked until the next loop turn, for the transactions written until then to leave in one write. */
  private flushScheduled = false;
  private capabilities = new Set<string>();
  private authMechanisms: string[] = [];
  private brokenError: SmtpError | undefined;
  private phase: "connect" | "greeting" | "session" = "connect";

  constructor(private readonly options: SmtpClientOptions) {}

  get pipelining(): boolean {
    return this.capabilities.has("PIPELINING");
  }

  /** BDAT with whole transactions pipelined: the relay offers CHUNKING and PIPELINING, and `?chunking=off` did not turn it off. */
  get chunking(): boolean {
    return this.options.chunking && this.capabilities.has("CHUNKING") && this.capabilities.has("PIPELINING");
  }

  get smtputf8(): boolean {
    return this.capabilities.has("SMTPUTF8");
  }

  /**
   * Connects, reads the greeting, says EHLO, upgrades with STARTTLS and
   * authenticates. Failures here are about the relay, never a message: they
   * carry no reply code (which the classifier would read as the message's).
   */
  async open(): Promise<void> {
    const { host, port, secure } = this.options;
    const socket = await new Promise<Socket>((resolve, reject) => {
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new SmtpError("connection timed out", { code: "ETIMEDOUT", timeoutType: "CONNECTION_TIMEOUT" }));
      }, this.options.connectionMs);
      const onError = (err: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        reject(new SmtpError(`connect ${err.code ?? "failed"}`, { code: err.code === "ENOTFOUND" || err.code === "EAI_AGAIN" ? "EDNS" : "ESOCKET" }));
      };
      const socket: Socket = secure
        ? tlsConnect({ host, port, rejectUnauthorized: this.options.tlsVerify, ...(isIP(host) ? {} : { servername: host }) }, () => {
            clearTimeout(timer);
            socket.off("error", onError);
            resolve(socket);
          })
        : netConnect({ host, port }, () => {
            clearTimeout(timer);
            socket.off("error", onError);
            resolve(socket);
          });
      socket.once("error", onError);
    });
    this.attach(socket);
    this.phase = "greeting";
    const greeting = await this.read(this.options.greetingMs, "GREETING_TIMEOUT");
    if (greeting.code !== 220) throw this.fail(new SmtpError(`the relay refused the connection (${greeting.code})`, { code: "ECONNECTION" }));
    this.phase = "session";
    await this.hello();
    if (!secure && this.capabilities.has("STARTTLS")) {
      const reply = await this.command("STARTTLS");
      if (reply.code !== 220) throw this.fail(new SmtpError(`STARTTLS was refused (${reply.code})`, { code: "ETLS" }));
      await this.upgrade();
      await this.hello();
    } else if (!secure && this.options.requireTls) {
      throw this.fail(new SmtpError("the relay does not offer STARTTLS and require_tls is set", { code: "ETLS" }));
    }
    if (this.options.user !== undefined) await this.authenticate(this.options.user, this.options.pass ?? "");
  }

  private attach(socket: Socket): void {
    this.socket = socket;
    socket.setNoDelay(true);
    socket.setTimeout(this.options.socketMs);
    socket.on("data", (chunk: Buffer) => this.onData(chunk));
    socket.on("timeout", () => {
      // Idle in the pool: just closed. Waiting for a reply: the command timed out.
      const timeoutType = this.phase === "greeting" ? "GREETING_TIMEOUT" : "SOCKET_TIMEOUT";
      this.breakWith(new SmtpError("timed out waiting for the relay", { code: "ETIMEDOUT", timeoutType }));
      socket.destroy();
    });
    socket.on("error", (err: NodeJS.ErrnoException) => this.breakWith(new SmtpError(`connection error ${err.code ?? ""}`.trim(), { code: "ESOCKET" })));
    socket.on("close", () => this.breakWith(new SmtpError("connection closed unexpectedly", { code: "ECONNECTION" })));
  }

  private async upgrade(): Promise<void> {
    const plain = this.socket!;
    plain.removeAllListeners("data");
    plain.removeAllListeners("timeout");
    plain.removeAllListeners("error");
    plain.removeAllListeners("close");
    plain.setTimeout(0);
    const { host } = this.options;
    const secured = await new Promise<TLSSocket>((resolve, reject) => {
      const socket = tlsConnect({ socket: plain, rejectUnauthorized: this.options.tlsVerify, ...(isIP(host) ? {} : { servername: host }) }, () => {
        socket.off("error", onError);
        resolve(socket);
      });
      const onError = (err: Error) => {
        plain.destroy();
        reject(new SmtpError(`TLS failed: ${err.message}`, { code: "ETLS" }));
      };
      socket.once("error", onError);
    }).catch((err: SmtpError) => {
      throw this.fail(err);
    });
    this.attach(secured);
  }

  private async hello(): Promise<void> {
    const name = ehloName();
    let reply = await this.command(`EHLO ${name}`);
    if (reply.code !== 250) {
      reply = await this.command(`HELO ${name}`);
      if (reply.code !== 250) throw this.fail(new SmtpError(`the relay refused HELO (${reply.code})`, { code: "ECONNECTION" }));
      this.capabilities = new Set();
      return;
    }
    this.capabilities = new Set();
    for (const line of reply.lines.slice(1)) {
      const words = line.slice(4).trim().toUpperCase().split(/\s+/);
      this.capabilities.add(words[0]!);
      if (words[0] === "AUTH") this.authMechanisms = words.slice(1);
    }
  }

  private async authenticate(user: string, pass: string): Promise<void> {
    const authFailed = (reply: Reply) => this.fail(new SmtpError("the relay refused our credentials", { code: "EAUTH", responseCode: reply.code, response: reply.text }));
    if (this.authMechanisms.includes("PLAIN") || !this.authMechanisms.includes("LOGIN")) {
      const reply = await this.command(`AUTH PLAIN ${Buffer.from(`\u0000${user}\u0000${pass}`, "utf8").toString("base64")}`);
      if (reply.code !== 235) throw authFailed(reply);
      return;
    }
    let reply = await this.command("AUTH LOGIN");
    if (reply.code === 334) reply = await this.command(Buffer.from(user, "utf8").toString("base64"));
    if (reply.code === 334) reply = await this.command(Buffer.from(pass, "utf8").toString("base64"));
    if (reply.code !== 235) throw authFailed(reply);
  }

  private onData(chunk: Buffer): void {
    this.buffered += chunk.toString("utf8");
    let start = 0;
    for (;;) {
      const end = this.buffered.indexOf("\n", start);
      if (end < 0) break;
      const line = this.buffered.slice(start, this.buffered.charCodeAt(end - 1) === 13 ? end - 1 : end);
      start = end + 1;
      this.pendingLines.push(line);
      // "250-…" continues a reply, "250 …" (or a bare "250") ends it.
      if (line.charCodeAt(3) !== 45) {
        const lines = this.pendingLines;
        this.pendingLines = [];
        this.deliver({ code: Number(line.slice(0, 3)) || 0, text: lines.join("\n"), lines });
      }
    }
    this.buffered = start === 0 ? this.buffered : this.buffered.slice(start);
  }

  private deliver(reply: Reply): void {
    const waiter = this.waiters.shift();
    if (reply.code === 421) {
      // The relay is closing this connection (at once, or after this reply): never used again.
      this.broken = true;
      this.socket?.end();
    }
    if (waiter) waiter.resolve(reply);
    // A reply nobody asked for (a 421 on an idle connection): the connection is done.
    else this.breakWith(new SmtpError("unexpected reply", { code: "EPROTOCOL", responseCode: reply.code, response: reply.text }));
  }

  private breakWith(err: SmtpError): void {
    if (!this.broken || !this.brokenError) {
      this.broken = true;
      this.brokenError = err;
    }
    const waiting = this.waiters.splice(0);
    for (const waiter of waiting) waiter.reject(err);
  }

  /** Marks the connection unusable and closes it; returns the error to throw. */
  fail(err: SmtpError): SmtpError {
    this.broken = true;
    this.socket?.destroy();
    return err;
  }

  /** Waits for the next reply (the greeting). */
  private read(timeoutMs: number, timeoutType: string): Promise<Reply> {
    this.socket!.setTimeout(timeoutMs);
    return this.expect().finally(() => this.socket?.setTimeout(this.options.socketMs)).catch((err: SmtpError) => {
      if (err.code === "ETIMEDOUT") err.timeoutType = timeoutType;
      throw err;
    });
  }

  /** A promise of the next reply not yet claimed, in command order. */
  expect(): Promise<Reply> {
    if (this.broken && this.brokenError) return Promise.reject(this.brokenError);
    return new Promise<Reply>((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  /**
   * The next `count` replies not yet claimed, in command order, each the
   * reply or the error that ended the wait for it: a pipelined group's in
   * one promise (one waiter shared by its places in the queue) rather than a
   * promise and a settled wrapper each.
   */
  expectGroup(count: number): Promise<Array<Reply | SmtpError>> {
    if (this.broken && this.brokenError) return Promise.resolve(new Array<Reply | SmtpError>(count).fill(this.brokenError));
    return new Promise((done) => {
      const outcomes: Array<Reply | SmtpError> = [];
      const settle = (outcome: Reply | SmtpError) => {
        if (outcomes.push(outcome) === count) done(outcomes);
      };
      // Waiters are rejected with SmtpErrors only (breakWith).
      const waiter: ReplyWaiter = { resolve: settle, reject: settle as (err: Error) => void };
      for (let i = 0; i < count; i += 1) this.waiters.push(waiter);
    });
  }

  write(data: string | Buffer): void {
    this.socket!.write(data);
  }

  /** Holds writes back until uncork(), to go out as one. */
  cork(): void {
    this.socket?.cork();
  }

  uncork(): void {
    this.socket?.uncork();
  }

  /** Writes the body and its end (".") in one go. */
  writeBody(body: Buffer): void {
    const socket = this.socket!;
    socket.cork();
    socket.write(body);
    socket.write(body.length === 0 || (body[body.length - 2] === 13 && body[body.length - 1] === 10) ? ".\r\n" : "\r\n.\r\n");
    socket.uncork();
  }

  /**
   * A whole BDAT transaction: its commands, then the message with its end of
   * line when it has none (the bytes a DATA reader would have kept: the CRLF
   * before the "." is the message's). Held back with every other written in
   * this loop turn, to leave in one write at the next.
   */
  writeTransaction(commands: string, body: Buffer): void {
    const socket = this.socket!;
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      socket.cork();
      setImmediate(() => {
        this.flushScheduled = false;
        socket.uncork();
      });
    }
    const ended = body.length === 0 || (body[body.length - 2] === 13 && body[body.length - 1] === 10);
    socket.write(`${commands}BDAT ${ended ? body.length : body.length + 2} LAST\r\n`);
    socket.write(body);
    if (!ended) socket.write(CRLF);
  }

  command(line: string): Promise<Reply> {
    const reply = this.expect();
    this.write(`${line}\r\n`);
    return reply;
  }

  /** QUIT, politely, without waiting long for the answer. */
  async quit(): Promise<void> {
    const socket = this.socket;
    if (!socket || this.broken) {
      socket?.destroy();
      return;
    }
    this.broken = true;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        socket.destroy();
        resolve();
      }, 1000);
      socket.once("close", () => {
        clearTimeout(timer);
        resolve();
      });
      socket.end("QUIT\r\n");
    });
  }

  destroy(): void {
    this.broken = true;
    this.socket?.destroy();
  }
}

/** The envelope of one message: MAIL FROM and its one RCPT TO. */
export interface SmtpEnvelope {
  from: string;
  to: string;
}

/**
 * Lines starting with "." get a second one (RFC 5321 4.5.2); a copy only
 * when there is one (a quoted-printable body rarely has any).
 */
export function dotStuff(body: Buffer): Buffer {
  let at = body[0] === 46 ? 0 : body.indexOf("\n.");
  if (at < 0) return body;
  const pieces: Buffer[] = [];
  let from = 0;
  while (at >= 0) {
    const dot = body[0] === 46 && at === 0 && from === 0 ? 0 : at + 1;
    pieces.push(body.subarray(from, dot), DOT);
    from = dot;
    at = body.indexOf("\n.", dot);
  }
  pieces.push(body.subarray(from));
  return Buffer.concat(pieces);
}

const DOT = Buffer.from(".", "latin1");
const CRLF = Buffer.from("\r\n", "latin1");
/**
 * BDAT transactions in flight on one connection at most: enough for a busy
 * pool to write several per syscall, few enough that a slow message (a
 * relay's content filter) holds up only a handful behind it.
 */
const CHUNKED_IN_FLIGHT = 8;
const ONCE = { once: true } as const;
// Module-level: a regular expression literal is a new object each time it is evaluated.
const UNSAFE_IN_COMMAND = /[\r\n<>\u0000]/;
const NON_ASCII = /[^\x00-\x7f]/;

/**
 * A pool of at most `maxConnections` connections to one relay. A message
 * takes an idle connection, or opens one while under the cap, or waits for
 * one to come back. A connection with a failed transaction is RSET before
 * reuse; a dead one (closed, timed out, 421) is dropped and its place taken
 * by a new one when needed.
 */
export class SmtpPool {
  private readonly idle: SmtpConnection[] = [];
  private open = 0;
  private readonly queue: Array<(connection: SmtpConnection | undefined) => void> = [];
  private closed = false;
  /** Connections opened since the start (for tests and benchmarks). */
  opened = 0;

  constructor(private readonly options: SmtpClientOptions) {}

  /**
   * Sends one message; resolves with the relay's reply to the data ("250 …"),
   * rejects with an SmtpError. `noDotLines`: its writer knows that no line of
   * the body starts with ".", so the body is not searched for lines to dot-stuff.
   */
  async send(envelope: SmtpEnvelope, body: Buffer, signal?: AbortSignal, noDotLines = false): Promise<string> {
    // The addresses go into command lines as they are: one holding a line break or an angle bracket would
    // be a command of its own (or another recipient) to the relay. Addresses are checked where they come
    // in; this is the last guard, before any connection is taken.
    if (UNSAFE_IN_COMMAND.test(envelope.from) || UNSAFE_IN_COMMAND.test(envelope.to)) {
      throw new SmtpError("an envelope address holds a line break or an angle bracket", { code: "EENVELOPE" });
    }
    for (let attempt = 0; ; attempt++) {
      const connection = await this.acquire(signal);
      if (connection.chunking) {
        const reused = connection.used;
        // Alone on the connection: nothing written before it is waiting for a reply (so none can be lost with it).
        const alone = connection.inFlight === 0;
        const unanswered = { yet: true };
        try {
          return await this.chunked(connection, envelope, body, signal, unanswered);
        } catch (err) {
          const error = err as SmtpError;
          // A reused connection the relay had closed while idle: not one reply came, so the relay took nothing
          // (it was gone before the message arrived); once more on a new one.
          if (reused && alone && unanswered.yet && attempt === 0 && (error.code === "ECONNECTION" || error.code === "ESOCKET") && error.responseCode === undefined) continue;
          throw error;
        }
      }
      const reused = connection.used;
      let wroteBody = false;
      let handedOver = false;
      const handOver = () => {
        // The next message waiting gets this connection now, before this one's last reply (see exchange()).
        const next = this.queue.shift();
        if (!next) return false;
        handedOver = true;
        next(connection);
        return true;
      };
      try {
        connection.used = true;
        return await this.transaction(connection, envelope, noDotLines ? body : dotStuff(body), signal, () => (wroteBody = true), handOver);
      } catch (err) {
        const error = err as SmtpError;
        // A reused connection the relay had closed while idle (or the message before on it failed it): no reply
        // to this message came, so nothing was taken; once more on a new one.
        if (reused && !wroteBody && attempt === 0 && (error.code === "ECONNECTION" || error.code === "ESOCKET") && error.responseCode === undefined) continue;
        throw error;
      } finally {
        // Handed over, the connection is the next message's to give back.
        if (!handedOver) this.release(connection);
      }
    }
  }

  private transaction(
    connection: SmtpConnection,
    envelope: SmtpEnvelope,
    body: Buffer,
    signal: AbortSignal | undefined,
    onBody: () => void,
    handOver: () => boolean,
  ): Promise<string> {
    if (signal?.aborted) return Promise.reject(new SmtpError("the send was aborted", { code: "EABORT" }));
    return this.abortable(connection, this.exchange(connection, envelope, body, onBody, handOver), signal);
  }

  /**
   * One message as a BDAT transaction pipelined behind those already in
   * flight on the connection. The connection goes back to the pool as soon as
   * the transaction is written, unless it is full (CHUNKED_IN_FLIGHT): then
   * when the first of its transactions is answered. `unanswered.yet` stays
   * true while no reply to this transaction has come.
   */
  private chunked(connection: SmtpConnection, envelope: SmtpEnvelope, body: Buffer, signal: AbortSignal | undefined, unanswered: { yet: boolean }): Promise<string> {
    connection.used = true;
    if (signal?.aborted) {
      this.release(connection);
      return Promise.reject(new SmtpError("the send was aborted", { code: "EABORT" }));
    }
    const utf8 = connection.smtputf8 && (NON_ASCII.test(envelope.from) || NON_ASCII.test(envelope.to)) ? " SMTPUTF8" : "";
    const replies = connection.expectGroup(3);
    if (!connection.broken) connection.writeTransaction(`MAIL FROM:<${envelope.from}>${utf8}\r\nRCPT TO:<${envelope.to}>\r\n`, body);
    connection.inFlight += 1;
    if (connection.inFlight < CHUNKED_IN_FLIGHT) this.release(connection);
    else connection.full = true;
    const work = replies.then((settled) => {
      connection.inFlight -= 1;
      if (connection.full) {
        connection.full = false;
        this.release(connection);
      }
      unanswered.yet = settled[0] instanceof SmtpError;
      return this.chunkedOutcome(connection, settled);
    });
    return this.abortable(connection, work, signal);
  }

  /**
   * What the replies to MAIL, RCPT and BDAT LAST say. The reply to BDAT LAST
   * ends the transaction whatever came before (a refused MAIL or RCPT gets a
   * 5xx to it, the relay having read and dropped the message: RFC 3030 2),
   * so the next one starts with its own MAIL and no RSET, which would land in
   * the middle of the transactions already written after this one.
   */
  private chunkedOutcome(connection: SmtpConnection, settled: Array<Reply | SmtpError>): Promise<string> {
    // A 421 closes the connection, so the replies after it fail: the 421 is what happened.
    for (let i = 0; i < settled.length; i += 1) {
      const outcome = settled[i]!;
      if (outcome instanceof SmtpError) throw outcome;
      if (outcome.code === 421) return this.refused(connection, "MAIL FROM", "EENVELOPE", outcome, false);
    }
    const mailReply = settled[0] as Reply;
    const rcptReply = settled[1] as Reply;
    const final = settled[2] as Reply;
    if (mailReply.code !== 250) return this.refused(connection, "MAIL FROM", "EENVELOPE", mailReply, false);
    if (rcptReply.code !== 250 && rcptReply.code !== 251) return this.refused(connection, "RCPT TO", "EENVELOPE", rcptReply, false);
    if (final.code !== 250) return this.refused(connection, "BDAT", "EMESSAGE", final, false);
    return Promise.resolve(final.lines[final.lines.length - 1]!);
  }

  /** `work`, or an EABORT as soon as `signal` aborts (the connection then closed: where its transactions stand is unknown). */
  private abortable(connection: SmtpConnection, work: Promise<string>, signal: AbortSignal | undefined): Promise<string> {
    if (!signal) return work;
    // Settled by whichever comes first, the exchange or the abort (one promise, not a race of two).
    return new Promise<string>((resolve, reject) => {
      const onAbort = () => {
        // Where the transaction stands is unknown: this connection is not used again.
        connection.destroy();
        reject(new SmtpError("the send was aborted", { code: "EABORT" }));
      };
      signal.addEventListener("abort", onAbort, ONCE);
      work.then(
        (reply) => {
          signal.removeEventListener("abort", onAbort);
          resolve(reply);
        },
        (err: unknown) => {
          signal.removeEventListener("abort", onAbort);
          reject(err);
        },
      );
    });
  }

  private async exchange(connection: SmtpConnection, envelope: SmtpEnvelope, body: Buffer, onBody: () => void, handOver: () => boolean): Promise<string> {
    const utf8 = connection.smtputf8 && (NON_ASCII.test(envelope.from) || NON_ASCII.test(envelope.to)) ? " SMTPUTF8" : "";
    const mail = `MAIL FROM:<${envelope.from}>${utf8}\r\n`;
    const rcpt = `RCPT TO:<${envelope.to}>\r\n`;
    let mailReply: Reply;
    let rcptReply: Reply;
    let dataReply: Reply;
    if (connection.pipelining) {
      const replies = connection.expectGroup(3);
      connection.write(mail + rcpt + "DATA\r\n");
      const settled = await replies;
      // A 421 closes the connection, so the replies after it fail: the 421 is what happened.
      for (let i = 0; i < settled.length; i += 1) {
        const outcome = settled[i]!;
        if (outcome instanceof SmtpError) throw outcome;
        if (outcome.code === 421) return this.refused(connection, "MAIL FROM", "EENVELOPE", outcome);
      }
      // By index: destructuring an array goes through its iterator.
      mailReply = settled[0] as Reply;
      rcptReply = settled[1] as Reply;
      dataReply = settled[2] as Reply;
    } else {
      mailReply = await connection.command(mail.slice(0, -2));
      if (mailReply.code !== 250) return this.refused(connection, "MAIL FROM", "EENVELOPE", mailReply);
      rcptReply = await connection.command(rcpt.slice(0, -2));
      if (rcptReply.code !== 250 && rcptReply.code !== 251) return this.refused(connection, "RCPT TO", "EENVELOPE", rcptReply);
      dataReply = await connection.command("DATA");
    }
    if (dataReply.code === 354 && (mailReply.code !== 250 || (rcptReply.code !== 250 && rcptReply.code !== 251))) {
      // A relay that took DATA after refusing the envelope: end an empty message, then report the refusal.
      connection.writeBody(Buffer.alloc(0));
      await connection.expect();
    }
    if (mailReply.code !== 250) return this.refused(connection, "MAIL FROM", "EENVELOPE", mailReply);
    if (rcptReply.code !== 250 && rcptReply.code !== 251) return this.refused(connection, "RCPT TO", "EENVELOPE", rcptReply);
    if (dataReply.code !== 354) return this.refused(connection, "DATA", "EMESSAGE", dataReply);
    const done = connection.expect();
    onBody();
    connection.cork();
    // Dot-stuffed already (send()).
    connection.writeBody(body);
    // With PIPELINING, the next message waiting takes the connection now: its
    // envelope is written (in the microtasks after this) while the socket is
    // still corked, so the end of this data and that envelope leave in one
    // write; their replies come in that order. Uncorked after those microtasks.
    // The price: an abort of that next message (shutdown, its deadline) closes
    // the connection before this one's reply, which then counts as lost
    // (unreachable, retried with the same Message-ID), as any abort mid-reply.
    if (connection.pipelining && handOver()) setImmediate(() => connection.uncork());
    else connection.uncork();
    const final = await done;
    // After the reply to the data the relay has ended the transaction either way (RFC 5321 4.1.1.4): no RSET,
    // which would also land in the middle of the next message's, already under way.
    if (final.code !== 250) return this.refused(connection, "DATA", "EMESSAGE", final, false);
    return final.lines[final.lines.length - 1]!;
  }

  /** A refused transaction: RSET for the next one unless `reset` is false (a 421 has closed the connection already), then the error. */
  private async refused(connection: SmtpConnection, command: string, code: string, reply: Reply, reset = true): Promise<never> {
    if (reset && !connection.broken) {
      const reset = await connection.command("RSET").catch(() => undefined);
      if (!reset || reset.code !== 250) connection.destroy();
    }
    throw new SmtpError(`${command} was refused`, { code, command, responseCode: reply.code, response: reply.lines.join(" ") });
  }

  private async acquire(signal?: AbortSignal): Promise<SmtpConnection> {
    for (;;) {
      if (this.closed) throw new SmtpError("the client is closed", { code: "ECONNECTION" });
      if (signal?.aborted) throw new SmtpError("the send was aborted", { code: "EABORT" });
      let connection = this.idle.pop();
      while (connection && connection.broken) {
        this.open -= 1;
        connection.destroy();
        connection = this.idle.pop();
      }
      if (connection) return connection;
      if (this.open < this.options.maxConnections) {
        this.open += 1;
        this.opened += 1;
        const fresh = new SmtpConnection(this.options);
        try {
          await fresh.open();
          return fresh;
        } catch (err) {
          fresh.destroy();
          this.open -= 1;
          this.wakeOne(undefined);
          throw err;
        }
      }
      // All connections busy: wait for one to come back (or a place to open one).
      const handed = await new Promise<SmtpConnection | undefined>((resolve) => this.queue.push(resolve));
      if (handed) return handed;
    }
  }

  private release(connection: SmtpConnection): void {
    if (connection.broken || this.closed) {
      this.open -= 1;
      connection.destroy();
      this.wakeOne(undefined);
      return;
    }
    const next = this.queue.shift();
    if (next) next(connection);
    else this.idle.push(connection);
  }

  /** Wakes one waiter: with a connection, or with none to open one of its own. */
  private wakeOne(connection: SmtpConnection | undefined): void {
    const next = this.queue.shift();
    if (next) next(connection);
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const wake of this.queue.splice(0)) wake(undefined);
    const idle = this.idle.splice(0);
    this.open -= idle.length;
    await Promise.all(idle.map((connection) => connection.quit()));
  }
}
