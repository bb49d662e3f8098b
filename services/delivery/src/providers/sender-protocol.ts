import type { OutgoingMessage } from "../domain/message.js";
import type { FailureCode, FailureKind, SendResult } from "../domain/provider.js";
import type { ProviderName } from "../domain/email.js";

// The messages between delivery's thread and its sender thread
// (./threaded.ts, ./sender-worker.ts). Messages go in batches: every send
// asked for in one turn of the event loop is one postMessage, every answer
// ready in one turn of the worker's is one back.

/** What the sender thread is started with (workerData): which provider, its settings as read at start. */
export interface SenderWorkerData {
  name: ProviderName;
  settings: unknown;
  /** The level of delivery's logger: the worker's own logs at the same. */
  logLevel: string;
}

export interface SendRequest {
  id: number;
  tenant: string;
  /** Its DKIM keys (KeyObjects) are cloned with it: postMessage knows them. */
  message: OutgoingMessage;
}

export type ToSender =
  | { type: "send"; sends: SendRequest[] }
  /** Abort the send with this id (its context's signal fired). */
  | { type: "abort"; id: number }
  /** Finish the sends in flight, close the provider (QUIT), then end. */
  | { type: "close" };

/** A SendFailure's fields, to rebuild it on the other side; `error` when the provider threw anything else. */
export interface SendAnswer {
  id: number;
  result?: SendResult;
  failure?: { kind: FailureKind; code: FailureCode; reply: string; detail: string };
  error?: string;
}

export type FromSender = { type: "answers"; answers: SendAnswer[] } | { type: "closed" };
