import { generateKeyPairSync } from "node:crypto";
import { join } from "node:path";
import { SmtpSink } from "@emailsvc/testing";
import { createLogger } from "@emailsvc/telemetry";
import type { OutgoingMessage } from "../src/domain/message.js";
import type { EmailProvider } from "../src/domain/provider.js";
import { configureProvider } from "../src/providers/registry.js";
import { parseSmtpUrl, SmtpProvider } from "../src/providers/smtp.js";
import { context, failureOf } from "./support/provider-calls.js";
import { ThreadedProvider } from "../src/providers/threaded.js";

// The live provider in a sender thread of delivery's own (providers/threaded.ts)
// against a real SMTP server: what a send gives back is the provider's own
// answer or failure, an abort reaches the thread, a thread that dies fails its
// sends retryably and the next send starts another, close() drains. The
// thread runs the built worker (dist/providers/sender-worker.js).

const sender = { name: "Acme", address: "news@acme.example", domain: "acme.example", header: "Acme <news@acme.example>" };
const logger = createLogger("delivery", "silent");

function message(to: string, i: number, subject = `Message ${i}`): OutgoingMessage {
  return {
    emailId: `eml_${i}`,
    from: sender,
    to,
    subject,
    html: `<p>Hello ${i}</p>`,
    text: `Hello ${i}`,
    messageId: `<eml_${i}@acme.example>`,
    headers: { From: sender.header, To: to, Subject: subject, "Message-ID": `<eml_${i}@acme.example>` },
  };
}

describe("the sender thread", () => {
  const opened: Array<{ close(): Promise<void> }> = [];
  afterEach(async () => {
    for (const thing of opened.splice(0).reverse()) await thing.close();
  });
  const sinkWith = async (options: ConstructorParameters<typeof SmtpSink>[0] = {}) => {
    const sink = await new SmtpSink(options).start();
    opened.push(sink);
    return sink;
  };
  const threaded = (url: string, script?: string) => {
    // The settings as the registry reads them from SMTP_URL, posted to the thread as they are.
    const provider = new ThreadedProvider({ name: "smtp", settings: parseSmtpUrl(url), logger, ...(script ? { script } : {}) });
    opened.push(provider);
    return provider;
  };

  it("is what EMAIL_PROVIDER=smtp builds with DELIVERY_SENDER_THREAD=on (off by default); another value stops the start", () => {
    const build = (env: Record<string, string>): EmailProvider => {
      const provider = configureProvider("smtp", { SMTP_URL: "smtp://127.0.0.1:2525", ...env }).build({ storage: undefined as never, logger, now: Date.now });
      opened.push(provider);
      return provider;
    };
    expect(build({})).toBeInstanceOf(SmtpProvider);
    expect(build({ DELIVERY_SENDER_THREAD: "on" })).toBeInstanceOf(ThreadedProvider);
    expect(build({ DELIVERY_SENDER_THREAD: "off" })).toBeInstanceOf(SmtpProvider);
    expect(() => configureProvider("smtp", { SMTP_URL: "smtp://127.0.0.1:2525", DELIVERY_SENDER_THREAD: "yes" })).toThrow(/DELIVERY_SENDER_THREAD must be "on" or "off"/);
    // The sandbox writes to the store: it stays on delivery's thread.
    expect(configureProvider("sandbox", {}).build({ storage: { sandboxKeeper: () => ({ start: () => undefined, stop: async () => undefined }) } as never, logger, now: Date.now })).not.toBeInstanceOf(ThreadedProvider);
  });

  it("sends signed messages and gives back the relay's answers and refusals as the provider's own", async () => {
    const sink = await sinkWith();
    sink.rcptReplies.set("gone@example.com", { code: 550, text: "5.1.1 <gone@example.com> user unknown" });
    const provider = threaded(`${sink.url()}?pool=2`);
    const { privateKey } = generateKeyPairSync("ed25519");
    const signed = { ...message("a@example.com", 1), dkim: [{ domain: "acme.example", selector: "ed1", privateKey }] };
    const results = await Promise.all([provider.send(signed, context()), provider.send(message("b@example.com", 2), context())]);
    expect(results.map((r) => r.response)).toEqual(["250 OK: queued", "250 OK: queued"]);
    const refused = await failureOf(provider.send(message("gone@example.com", 3), context()));
    expect(refused).toMatchObject({ kind: "permanent", code: "recipient_rejected" });
    // The reply comes back with the address removed, as the provider gives it.
    expect(refused.reply).toMatch(/^550 5\.1\.1 .*user unknown$/);
    expect(refused.reply).not.toContain("gone@example.com");
    expect(sink.to("a@example.com")[0]!.raw).toMatch(/^DKIM-Signature: v=1; a=ed25519-sha256;[^]*? d=acme\.example;\s+q=dns\/txt; s=ed1;/m);
    expect(sink.to("b@example.com")).toHaveLength(1);
    expect(provider.started).toBe(1);
  });

  it("forwards a send's abort to the thread, which stops that send; the next one goes through", async () => {
    const sink = await sinkWith();
    // The relay holds its answer to DATA: only the abort can end the send.
    sink.dataDelayMs = 120_000;
    const provider = threaded(sink.url());
    const controller = new AbortController();
    const sending = failureOf(provider.send(message("slow@example.com", 1), context(controller.signal)));
    await sink.nextData();
    controller.abort();
    await expect(sending).resolves.toMatchObject({ kind: "aborted", code: "send_aborted" });
    sink.dataDelayMs = 0;
    sink.releaseHeld();
    await expect(provider.send(message("next@example.com", 2), context())).resolves.toMatchObject({ response: "250 OK: queued" });
    // An already aborted send never reaches the thread.
    const aborted = new AbortController();
    aborted.abort();
    await expect(failureOf(provider.send(message("never@example.com", 3), context(aborted.signal)))).resolves.toMatchObject({ kind: "aborted" });
    expect(sink.to("never@example.com")).toHaveLength(0);
  });

  it("fails the sends of a thread that dies as unreachable (retried, never lost) and starts another for the next send", async () => {
    const sink = await sinkWith();
    sink.dataDelayMs = 120_000;
    const provider = threaded(sink.url(), join(__dirname, "support", "crashing-sender-worker.js"));
    const inFlight = failureOf(provider.send(message("held@example.com", 1), context()));
    await sink.nextData();
    const crashing = failureOf(provider.send(message("crash@example.com", 2, "crash the thread"), context()));
    for (const failure of await Promise.all([inFlight, crashing])) {
      expect(failure).toMatchObject({ kind: "unreachable", code: "relay_unavailable" });
      expect(failure.detail).toMatch(/the sender thread stopped \(exit code 7\)/);
    }
    sink.dataDelayMs = 0;
    sink.releaseHeld();
    await expect(provider.send(message("after@example.com", 3), context())).resolves.toMatchObject({ response: "250 OK: queued" });
    expect(provider.started).toBe(2);
    expect(sink.to("after@example.com")).toHaveLength(1);
  });

  it("close() lets the sends asked for finish, then closes the provider and ends the thread; a send after it is refused", async () => {
    const sink = await sinkWith({ keep: false });
    const provider = threaded(`${sink.url()}?pool=3`);
    const sends = Array.from({ length: 30 }, (_, i) => provider.send(message(`r${i}@example.com`, i), context()));
    // Every send was asked for before close(): none may be cut off.
    const closed = provider.close();
    const results = await Promise.all(sends);
    await closed;
    expect(results.every((r) => r.response === "250 OK: queued")).toBe(true);
    expect(sink.acceptedCount).toBe(30);
    expect(sink.recipientCounts.size).toBe(30);
    await expect(failureOf(provider.send(message("late@example.com", 99), context()))).resolves.toMatchObject({ kind: "unreachable", detail: "the provider is closed" });
  });
});
