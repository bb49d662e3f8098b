import { parentPort, workerData } from "node:worker_threads";
import { createLogger } from "@emailsvc/telemetry";
import { SendFailure, type EmailProvider } from "../domain/provider.js";
import type { DeliveryStorage } from "../storage/repositories.js";
import { PROVIDERS } from "./registry.js";
import type { FromSender, SendAnswer, SenderWorkerData, ToSender } from "./sender-protocol.js";

// The sender thread's entry (started by ./threaded.ts): builds the live
// provider from the settings read at start and sends what delivery's thread
// posts, so that writing the message (MIME, quoted-printable, DKIM) and the
// socket writes of the SMTP client run beside delivery's store writes and
// renders instead of between them.

const port = parentPort;
if (!port) throw new Error("sender-worker.js runs as a worker thread of delivery (providers/threaded.ts)");
const data = workerData as SenderWorkerData;
const definition = PROVIDERS.get(data.name);
if (!definition) throw new Error(`no provider named ${data.name}`);

const noStorage = new Proxy({} as DeliveryStorage, {
  get() {
    throw new Error(`the ${data.name} provider runs in the sender thread, which has no store`);
  },
});
const provider: EmailProvider = definition.build(data.settings, { storage: noStorage, logger: createLogger("delivery", data.logLevel), now: Date.now });

const inFlight = new Map<number, { controller: AbortController; done: Promise<void> }>();
let answers: SendAnswer[] = [];
let flushScheduled = false;

// Answers ready in the same turn go back in one message.
function answer(reply: SendAnswer): void {
  answers.push(reply);
  if (flushScheduled) return;
  flushScheduled = true;
  setImmediate(flush);
}

function flush(): void {
  flushScheduled = false;
  if (answers.length === 0) return;
  const batch: FromSender = { type: "answers", answers };
  answers = [];
  port!.postMessage(batch);
}

async function sendOne(id: number, tenant: string, message: Parameters<EmailProvider["send"]>[0], signal: AbortSignal): Promise<void> {
  try {
    answer({ id, result: await provider.send(message, { tenant, signal }) });
  } catch (err) {
    if (err instanceof SendFailure) answer({ id, failure: { kind: err.kind, code: err.code, reply: err.reply, detail: err.detail } });
    else answer({ id, error: err instanceof Error ? err.message : String(err) });
  } finally {
    inFlight.delete(id);
  }
}

async function close(): Promise<void> {
  await Promise.all([...inFlight.values()].map((send) => send.done));
  flush();
  await provider.close().catch(() => undefined);
  port!.postMessage({ type: "closed" } satisfies FromSender);
  port!.close();
}

port.on("message", (request: ToSender) => {
  switch (request.type) {
    case "send":
      for (const { id, tenant, message } of request.sends) {
        const controller = new AbortController();
        const send = { controller, done: Promise.resolve() };
        inFlight.set(id, send);
        send.done = sendOne(id, tenant, message, controller.signal);
      }
      return;
    case "abort":
      inFlight.get(request.id)?.controller.abort();
      return;
    case "close":
      void close();
      return;
  }
});
