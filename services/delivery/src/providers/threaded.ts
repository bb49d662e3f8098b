import { join } from "node:path";
import { Worker } from "node:worker_threads";
import type { Logger } from "@emailsvc/telemetry";
import type { ProviderName } from "../domain/email.js";
import type { OutgoingMessage } from "../domain/message.js";
import { SendFailure, type EmailProvider, type SendContext, type SendResult } from "../domain/provider.js";
import type { FromSender, SendAnswer, SendRequest, SenderWorkerData, ToSender } from "./sender-protocol.js";

/**
 * The sender thread's script: always the built one of this package
 * (services/delivery/dist/providers/sender-worker.js), whether this file runs
 * from dist (the service, `npm start`, other packages' tests, which import
 * delivery's dist) or from src (delivery's own tests, compiled by SWC): a
 * worker cannot load a .ts file, and both dist/providers and src/providers
 * are two levels under the package.
 */
export const SENDER_WORKER_SCRIPT = join(__dirname, "..", "..", "dist", "providers", "sender-worker.js");

/** A close that takes longer (a relay that never answers QUIT) ends the thread anyway. */
const CLOSE_GRACE_MS = 10_000;

interface Pending {
  resolve: (result: SendResult) => void;
  reject: (err: unknown) => void;
  /** Removes the abort listener from the send's signal. */
  unlisten: () => void;
}

export interface ThreadedProviderOptions {
  /** The provider the thread builds (smtp, ses): one that needs nothing of delivery's thread (no store). */
  name: ProviderName;
  /** Its settings as read at start: posted to the thread, so plain data. */
  settings: unknown;
  logger: Logger;
  /** The worker script; tests may give another. Default SENDER_WORKER_SCRIPT. */
  script?: string;
}

/**
 * A live provider run in a thread of its own: delivery's thread posts each
 * message and gets the provider's answer back, so writing it (MIME,
 * quoted-printable, DKIM) and the SMTP client's socket work leave the thread
 * that also renders and writes the store. Sends asked for in one turn go in
 * one postMessage. A send's abort reaches the thread (the provider aborts
 * it). A thread that dies fails the sends it had as `unreachable` (retried
 * like a lost connection: the relay may or may not have the message, as
 * after a crash) and the next send starts a new one. close() lets the sends
 * in flight finish, closes the provider (QUIT) and ends the thread.
 */
export class ThreadedProvider implements EmailProvider {
  readonly name: ProviderName;
  private worker: Worker | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private queued: SendRequest[] = [];
  private flushScheduled = false;
  private closing: Promise<void> | undefined;
  /** Threads started so far (tests see a restart with it). */
  started = 0;

  constructor(private readonly options: ThreadedProviderOptions) {
    this.name = options.name;
  }

  send(message: OutgoingMessage, context: SendContext): Promise<SendResult> {
    if (this.closing) return Promise.reject(new SendFailure("unreachable", "relay_unavailable", { detail: "the provider is closed" }));
    if (context.signal.aborted) return Promise.reject(new SendFailure("aborted", "send_aborted", { detail: "aborted before it was sent" }));
    const worker = this.ensureWorker();
    const id = this.nextId++;
    return new Promise<SendResult>((resolve, reject) => {
      const onAbort = () => this.post(worker, { type: "abort", id });
      context.signal.addEventListener("abort", onAbort, { once: true });
      this.pending.set(id, { resolve, reject, unlisten: () => context.signal.removeEventListener("abort", onAbort) });
      if (this.pending.size === 1) worker.ref();
      // Without its HtmlParts: their fixed pieces, cloned per message, would be encoded again for each (mime.ts keeps them by identity).
      this.queued.push({ id, tenant: context.tenant, message: message.htmlParts ? { ...message, htmlParts: undefined } : message });
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  close(): Promise<void> {
    this.closing ??= this.closeWorker();
    return this.closing;
  }

  private async closeWorker(): Promise<void> {
    const worker = this.worker;
    if (!worker) return;
    this.flush();
    worker.ref();
    const exited = new Promise<void>((resolve) => worker.once("exit", () => resolve()));
    this.post(worker, { type: "close" });
    const grace = setTimeout(() => void worker.terminate(), CLOSE_GRACE_MS);
    await exited;
    clearTimeout(grace);
  }

  private ensureWorker(): Worker {
    if (this.worker) return this.worker;
    const data: SenderWorkerData = { name: this.options.name, settings: this.options.settings, logLevel: this.options.logger.level };
    const worker = new Worker(this.options.script ?? SENDER_WORKER_SCRIPT, { workerData: data });
    this.started++;
    // Idle, the thread does not keep the process alive (a send refs it again).
    worker.unref();
    worker.on("message", (reply: FromSender) => {
      if (reply.type === "answers") for (const answer of reply.answers) this.settle(answer);
    });
    worker.on("error", (err) => {
      this.options.logger.error({ provider: this.name, err: { name: err.name, message: err.message } }, "the sender thread failed");
    });
    worker.on("exit", (code) => {
      if (this.worker === worker) this.worker = undefined;
      if (this.pending.size === 0) return;
      // Its sends may or may not have reached the relay: retried, like a connection lost mid-send.
      const failure = new SendFailure("unreachable", "relay_unavailable", { detail: `the sender thread stopped (exit code ${code})` });
      for (const [id, pending] of this.pending) {
        this.pending.delete(id);
        pending.unlisten();
        pending.reject(failure);
      }
      this.queued = [];
    });
    this.worker = worker;
    return worker;
  }

  /** Posts the queued sends to the current thread (a thread that died meanwhile failed them and emptied the queue). */
  private flush(): void {
    this.flushScheduled = false;
    const worker = this.worker;
    if (!worker || this.queued.length === 0) return;
    const sends = this.queued;
    this.queued = [];
    this.post(worker, { type: "send", sends });
  }

  private post(worker: Worker, request: ToSender): void {
    try {
      worker.postMessage(request);
    } catch (err) {
      // A message that cannot be cloned (never the case for an OutgoingMessage): fail those sends, not the thread.
      if (request.type !== "send") return;
      for (const { id } of request.sends) this.settle({ id, error: `could not post the message to the sender thread: ${(err as Error).message}` });
    }
  }

  private settle(answer: SendAnswer): void {
    const pending = this.pending.get(answer.id);
    if (!pending) return;
    this.pending.delete(answer.id);
    pending.unlisten();
    if (this.pending.size === 0) this.worker?.unref();
    if (answer.result) pending.resolve(answer.result);
    else if (answer.failure) pending.reject(new SendFailure(answer.failure.kind, answer.failure.code, { reply: answer.failure.reply, detail: answer.failure.detail }));
    else pending.reject(new Error(answer.error ?? "the sender thread gave no answer"));
  }
}
