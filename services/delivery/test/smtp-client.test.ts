import { createServer, type AddressInfo, type Server, type Socket } from "node:net";
import { SmtpSink } from "@emailsvc/testing";
import { SMTPServer } from "smtp-server";
import type { OutgoingMessage } from "../src/domain/message.js";
import type { SendFailure } from "../src/domain/provider.js";
import { parseSmtpUrl, SmtpProvider } from "../src/providers/smtp.js";
import { context, failureOf } from "./support/provider-calls.js";
import { dotStuff } from "../src/providers/smtp-client.js";

// The SMTP provider's own client against real servers: the tests' sink (its
// lean counting server, and smtp-server with STARTTLS) and a bare socket
// server for a relay that misbehaves.

const sender = { name: "Acme", address: "news@acme.example", domain: "acme.example", header: "Acme <news@acme.example>" };

function message(to: string, i = 0): OutgoingMessage {
  return {
    emailId: `eml_${i}`,
    from: sender,
    to,
    subject: `Message ${i}`,
    html: `<p>Hello ${i}</p>\n.a line starting with a dot`,
    text: `Hello ${i}\n.a line starting with a dot`,
    messageId: `<eml_${i}@acme.example>`,
    headers: { From: sender.header, To: to, Subject: `Message ${i}`, "Message-ID": `<eml_${i}@acme.example>` },
  };
}

describe("SMTP client", () => {
  const opened: Array<{ close(): Promise<void> }> = [];
  afterEach(async () => {
    for (const thing of opened.splice(0).reverse()) await thing.close();
  });
  const sinkWith = async (options: ConstructorParameters<typeof SmtpSink>[0]) => {
    const sink = await new SmtpSink(options).start();
    opened.push(sink);
    return sink;
  };
  const providerFor = (url: string) => {
    const provider = new SmtpProvider(parseSmtpUrl(url));
    opened.push(provider);
    return provider;
  };

  it.each([true, false])("sends many messages over one connection, pipelined when the relay offers PIPELINING (%s)", async (pipelining) => {
    const sink = await sinkWith({ keep: false, pipelining, chunking: false });
    const provider = providerFor(`${sink.url()}?pool=1`);
    for (let i = 0; i < 5; i++) {
      const result = await provider.send(message(`r${i}@example.com`, i), context());
      expect(result.response).toBe("250 OK: queued");
    }
    expect(sink.acceptedCount).toBe(5);
    expect(sink.connections).toBe(1);
    expect(provider.connectionsOpened).toBe(1);
    expect(sink.pipelinedTransactions).toBe(pipelining ? 5 : 0);
  });

  it.each([
    ["CHUNKING and PIPELINING", { pipelining: true, chunking: true }, "", 40],
    ["CHUNKING without PIPELINING", { pipelining: false, chunking: true }, "", 0],
    ["CHUNKING, turned off by ?chunking=off", { pipelining: true, chunking: true }, "&chunking=off", 0],
    ["no CHUNKING", { pipelining: true, chunking: false }, "", 0],
  ])("a relay offering %s: BDAT with whole transactions in flight only with both and not turned off", async (_name, offers, option, chunked) => {
    const sink = await sinkWith({ keep: false, ...offers });
    const provider = providerFor(`${sink.url()}?pool=1${option}`);
    const count = 40;
    await Promise.all(Array.from({ length: count }, (_, i) => provider.send(message(`c${i}@example.com`, i), context())));
    expect(sink.acceptedCount).toBe(count);
    expect([...sink.recipientCounts.values()].every((n) => n === 1)).toBe(true);
    expect(sink.chunkedMessages).toBe(chunked);
    expect(sink.connections).toBe(1);
  });

  it("with BDAT, writes several transactions before their replies; their bytes arrive as written", async () => {
    const sink = await sinkWith({ keep: false, capture: true });
    const provider = providerFor(`${sink.url()}?pool=2`);
    const count = 100;
    await Promise.all(Array.from({ length: count }, (_, i) => provider.send(message(`d${i}@example.com`, i), context())));
    expect(sink.chunkedMessages).toBe(count);
    expect(sink.connections).toBe(2);
    // A transaction's MAIL came in the same read as the message before: written together, not after its reply.
    expect(sink.envelopesAfterData).toBeGreaterThan(0);
    // Lines starting with "." go as they are (no dot-stuffing with BDAT).
    for (const arrived of sink.captured) expect(arrived.raw.toString("latin1")).toContain("\r\n.a line starting with a dot");
  });

  it.each([false, true])("fails only the message whose recipient is refused mid-pipeline; the connection goes on (CHUNKING %s)", async (chunking) => {
    const sink = await sinkWith({ keep: false, chunking });
    sink.rcptReplies.set("gone@example.com", { code: 550, text: "5.1.1 <gone@example.com>: no such user" });
    const provider = providerFor(`${sink.url()}?pool=1`);
    await provider.send(message("first@example.com", 1), context());
    const failure = await failureOf(provider.send(message("gone@example.com", 2), context()));
    expect(failure).toMatchObject({ kind: "permanent", code: "recipient_rejected", reply: "550 5.1.1 <recipient>: no such user" });
    expect(failure.detail).not.toContain("gone@example.com");
    await provider.send(message("after@example.com", 3), context());
    expect(Object.fromEntries(sink.recipientCounts)).toEqual({ "first@example.com": 1, "after@example.com": 1 });
    expect(sink.connections).toBe(1);
  });

  it("refuses an envelope address that would break a command line, before talking to the relay", async () => {
    const sink = await sinkWith({ keep: false });
    const provider = providerFor(`${sink.url()}?pool=1`);
    for (const to of ["a@example.com>\r\nRCPT TO:<b@example.com", "a@example.com\nDATA", "a@exa<mple.com"]) {
      expect(await failureOf(provider.send(message(to, 1), context()))).toMatchObject({ kind: "permanent", code: "recipient_rejected" });
    }
    expect(sink.connections).toBe(0);
    await provider.send(message("fine@example.com", 2), context());
    expect(Object.fromEntries(sink.recipientCounts)).toEqual({ "fine@example.com": 1 });
  });

  it.each([false, true])("a 5xx to the data fails that message (message_rejected), a 4xx defers it, and the connection stays in use (CHUNKING %s)", async (chunking) => {
    const sink = await sinkWith({ keep: false, chunking });
    sink.dataReplies.set("spam@example.com", [{ code: 554, text: "5.7.1 looks like spam" }]);
    sink.dataReplies.set("later@example.com", [{ code: 451, text: "4.3.0 try later" }]);
    const provider = providerFor(`${sink.url()}?pool=1`);
    expect(await failureOf(provider.send(message("spam@example.com"), context()))).toMatchObject({ kind: "permanent", code: "message_rejected" });
    expect(await failureOf(provider.send(message("later@example.com"), context()))).toMatchObject({ kind: "transient", code: "relay_deferred" });
    await provider.send(message("later@example.com"), context());
    expect(sink.acceptedCount).toBe(1);
    expect(sink.connections).toBe(1);
  });

  it.each([false, true])("keeps at most the pool's connections open and reuses them, with no message lost or sent twice (CHUNKING %s)", async (chunking) => {
    const sink = await sinkWith({ keep: false, chunking });
    const provider = providerFor(`${sink.url()}?pool=3`);
    const count = 300;
    await Promise.all(Array.from({ length: count }, (_, i) => provider.send(message(`m${i}@example.com`, i), context())));
    expect(sink.acceptedCount).toBe(count);
    expect(sink.recipientCounts.size).toBe(count);
    expect([...sink.recipientCounts.values()].every((n) => n === 1)).toBe(true);
    expect(sink.connections).toBeLessThanOrEqual(3);
    expect(provider.connectionsOpened).toBe(sink.connections);
  });

  it("writes the next waiting message's envelope with the end of the data before it; one sent at a time waits for its reply", async () => {
    const sink = await sinkWith({ keep: false, chunking: false });
    const provider = providerFor(`${sink.url()}?pool=1`);
    for (let i = 0; i < 3; i++) await provider.send(message(`alone${i}@example.com`, i), context());
    // Nobody waited for the connection: each envelope went out after the reply to the data before it.
    expect(sink.envelopesAfterData).toBe(0);
    const count = 40;
    await Promise.all(Array.from({ length: count }, (_, i) => provider.send(message(`w${i}@example.com`, i), context())));
    expect(sink.acceptedCount).toBe(3 + count);
    expect([...sink.recipientCounts.values()].every((n) => n === 1)).toBe(true);
    expect(sink.connections).toBe(1);
    // How TCP splits the reads is the kernel's: some of them, at least, came together.
    expect(sink.envelopesAfterData).toBeGreaterThan(0);
  });

  it.each([false, true])("a refused data (or recipient) with the next message's envelope already written fails that message only (no RSET in the middle of the next; CHUNKING %s)", async (chunking) => {
    const sink = await sinkWith({ keep: false, chunking });
    sink.dataReplies.set("spam@example.com", [{ code: 554, text: "5.7.1 looks like spam" }]);
    sink.dataReplies.set("later@example.com", [{ code: 451, text: "4.3.0 try later" }]);
    sink.rcptReplies.set("gone@example.com", { code: 550, text: "5.1.1 no such user" });
    const provider = providerFor(`${sink.url()}?pool=1`);
    const addresses = ["a@example.com", "spam@example.com", "b@example.com", "gone@example.com", "later@example.com", "c@example.com", "d@example.com"];
    const outcomes = await Promise.all(addresses.map((to, i) => provider.send(message(to, i), context()).then(() => "sent", (err: SendFailure) => err.code)));
    expect(outcomes).toEqual(["sent", "message_rejected", "sent", "recipient_rejected", "relay_deferred", "sent", "sent"]);
    expect(sink.chunkedMessages).toBe(chunking ? 6 : 0);
    expect(Object.fromEntries(sink.recipientCounts)).toEqual({ "a@example.com": 1, "b@example.com": 1, "c@example.com": 1, "d@example.com": 1 });
    expect(sink.connections).toBe(1);
    expect(sink.envelopesAfterData).toBeGreaterThan(0);
  });

  it("upgrades with STARTTLS and authenticates (smtp-server, a self-signed certificate)", async () => {
    const sink = await sinkWith({ starttls: true });
    const provider = providerFor(`${sink.url({ user: "relay-user", pass: "s3cret:/@" })}?require_tls=true&tls_verify=false`);
    await provider.send(message("tls@example.com", 7), context());
    const [arrived] = sink.accepted;
    expect(arrived).toMatchObject({ secure: true, user: "relay-user", envelope: { from: "news@acme.example", to: ["tls@example.com"] } });
    expect(arrived!.parsed.text).toBe("Hello 7\n.a line starting with a dot");
    expect(arrived!.parsed.subject).toBe("Message 7");

    // The same relay's certificate, verified (the default): refused, nothing sent.
    const verifying = providerFor(`${sink.url()}?require_tls=true`);
    expect(await failureOf(verifying.send(message("tls@example.com", 8), context()))).toMatchObject({ kind: "unreachable", code: "relay_unavailable" });
    expect(sink.messages).toHaveLength(1);
  });

  it("speaks implicit TLS (smtps) and AUTH LOGIN; refused credentials are the relay's setting, not the message's fault", async () => {
    // smtp-server itself (its built-in self-signed certificate), offering LOGIN only.
    const arrived: Array<{ user: unknown; secure: boolean }> = [];
    const server = new SMTPServer({
      secure: true,
      authMethods: ["LOGIN"],
      logger: false,
      onAuth: (auth, _session, callback) => (auth.password === "right" ? callback(null, { user: auth.username }) : callback(Object.assign(new Error("5.7.8 bad credentials"), { responseCode: 535 }))),
      onData: (stream, session, callback) => {
        stream.on("end", () => {
          arrived.push({ user: session.user, secure: session.secure });
          callback();
        });
        stream.resume();
      },
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
    try {
      const port = (server.server.address() as AddressInfo).port;
      const provider = providerFor(`smtps://relay-user:right@127.0.0.1:${port}?tls_verify=false`);
      await provider.send(message("tls@example.com"), context());
      expect(arrived).toEqual([{ user: "relay-user", secure: true }]);
      const refused = providerFor(`smtps://relay-user:wrong@127.0.0.1:${port}?tls_verify=false`);
      expect(await failureOf(refused.send(message("tls@example.com"), context()))).toMatchObject({ kind: "unreachable", code: "relay_unavailable", reply: "" });
      expect(arrived).toHaveLength(1);
      await provider.close();
      await refused.close();
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it("with require_tls, refuses a relay that offers no STARTTLS before sending anything", async () => {
    const sink = await sinkWith({});
    const provider = providerFor(`${sink.url()}?require_tls=true`);
    expect(await failureOf(provider.send(message("plain@example.com"), context()))).toMatchObject({ kind: "unreachable", code: "relay_unavailable" });
    expect(sink.messages).toHaveLength(0);
  });

  it("a 421 closes the connection (relay_unavailable) and the next message gets a new one", async () => {
    const sink = await sinkWith({});
    sink.rcptReplies.set("closing@example.com", { code: 421, text: "4.3.2 shutting down" });
    const provider = providerFor(sink.url());
    expect(await failureOf(provider.send(message("closing@example.com"), context()))).toMatchObject({ kind: "unreachable", code: "relay_unavailable" });
    await provider.send(message("next@example.com"), context());
    expect(sink.accepted.map((m) => m.envelope.to)).toEqual([["next@example.com"]]);
    expect(provider.connectionsOpened).toBe(2);
  });

  it("aborts a message waiting for the relay's answer to its data", async () => {
    const sink = await sinkWith({});
    sink.dataDelayMs = 30_000;
    const provider = providerFor(sink.url());
    const controller = new AbortController();
    const sending = failureOf(provider.send(message("slow@example.com"), context(controller.signal)));
    await sink.nextData();
    controller.abort();
    expect(await sending).toMatchObject({ kind: "aborted", code: "send_aborted" });
    sink.releaseHeld();
    // The connection given up is not reused: the next message opens another.
    sink.dataDelayMs = 0;
    await provider.send(message("fast@example.com"), context());
    expect(provider.connectionsOpened).toBe(2);
  });

  it("a relay that refuses the connection (554 greeting) or does not listen is unreachable, not the message's fault", async () => {
    const refusing = createServer((socket) => {
      socket.on("error", () => undefined);
      socket.end("554 5.7.1 no service for you\r\n");
    });
    await new Promise<void>((resolve) => refusing.listen(0, "127.0.0.1", () => resolve()));
    const port = (refusing.address() as AddressInfo).port;
    try {
      const provider = providerFor(`smtp://127.0.0.1:${port}`);
      expect(await failureOf(provider.send(message("a@example.com"), context()))).toMatchObject({ kind: "unreachable", code: "relay_unavailable", reply: "" });
    } finally {
      await new Promise<void>((resolve) => refusing.close(() => resolve()));
    }
    // The same port, no longer listened on.
    const nobody = providerFor(`smtp://127.0.0.1:${port}`);
    expect(await failureOf(nobody.send(message("a@example.com"), context()))).toMatchObject({ kind: "unreachable", code: "relay_unavailable" });
  });

  it.each([
    ["DATA", (onLine: (line: string, connection: number, socket: Socket) => boolean) => lockStepRelay("idle-closer", { onLine })],
    ["BDAT", (onLine: (line: string, connection: number, socket: Socket) => boolean) => chunkingRelay({ onLine })],
  ] as const)("with %s, a reused connection the relay has dropped is replaced before anything of the message is sent", async (_, startRelay) => {
    // On its first connection, the second MAIL FROM is met by a dropped connection (a relay's idle timeout, racing the client).
    let mails = 0;
    const relay = await startRelay((line, connection, socket) => {
      if (line.startsWith("MAIL") && connection === 1 && ++mails === 2) {
        socket.destroy();
        return true;
      }
      return false;
    });
    try {
      const provider = new SmtpProvider(parseSmtpUrl(`smtp://127.0.0.1:${relay.port}?pool=1`));
      await provider.send(message("first@example.com", 1), context());
      await provider.send(message("second@example.com", 2), context());
      expect({ bodies: relay.bodies, connections: relay.connections, opened: provider.connectionsOpened }).toEqual({ bodies: 2, connections: 2, opened: 2 });
      await provider.close();
    } finally {
      await relay.close();
    }
  });

  it("with BDAT, a connection lost with transactions in flight fails each of them as retryable, none sent again by the client; the next message gets a new connection", async () => {
    // On its first connection, reads three whole messages, answering nothing, and drops the connection.
    const relay = await chunkingRelay({
      onMessage: (connection, messages, socket) => {
        if (connection !== 1) return false;
        if (messages === 3) socket.destroy();
        return true;
      },
      onLine: (line, connection) => connection === 1 && /^(MAIL|RCPT)/.test(line),
    });
    try {
      const provider = new SmtpProvider(parseSmtpUrl(`smtp://127.0.0.1:${relay.port}?pool=1`));
      const failures = await Promise.all([1, 2, 3].map((i) => failureOf(provider.send(message(`lost${i}@example.com`, i), context()))));
      // Delivery retries them (the relay may or may not have taken them: the Message-ID lets receivers drop a copy).
      expect(failures.map((failure) => failure.kind)).toEqual(["unreachable", "unreachable", "unreachable"]);
      expect(relay.bodies).toBe(3);
      await provider.send(message("next@example.com", 4), context());
      expect({ bodies: relay.bodies, connections: relay.connections, opened: provider.connectionsOpened }).toEqual({ bodies: 4, connections: 2, opened: 2 });
      await provider.close();
    } finally {
      await relay.close();
    }
  });

  describe("a relay that drops the connection", () => {
    let server: LockStepRelay;
    let port = 0;
    let dropNextData = true;
    /** Bodies that arrived in full (up to the "."), over every connection. */
    const bodies = () => server.bodies;
    beforeEach(async () => {
      dropNextData = true;
      // Speaks lock-step SMTP; the first message's data is read in full and the connection dropped before the reply.
      server = await lockStepRelay("flaky", {
        onBody: (socket) => {
          if (!dropNextData) return false;
          dropNextData = false;
          socket.destroy();
          return true;
        },
      });
      port = server.port;
    });
    afterEach(async () => {
      await server.close();
    });

    it("after the data, before its reply: a retryable failure, not sent again by the client; the next message gets a new connection", async () => {
      const provider = providerFor(`smtp://127.0.0.1:${port}`);
      const failure = await failureOf(provider.send(message("dropped@example.com"), context()));
      // Delivery retries it (the relay may or may not have taken it: the Message-ID lets receivers drop a copy).
      expect(failure.kind).not.toBe("permanent");
      expect(failure.kind).not.toBe("aborted");
      expect(bodies()).toBe(1);
      await provider.send(message("next@example.com"), context());
      expect(bodies()).toBe(2);
      expect(server.connections).toBe(2);
      // QUIT on close: the relay's server can then close (it waits for its connections).
      await provider.close();
    });
  });
});

describe("dot-stuffing", () => {
  it.each([
    ["no dot", "a\r\nb\r\n", "a\r\nb\r\n"],
    ["a dot at the start", ".a\r\nb\r\n", "..a\r\nb\r\n"],
    ["dots at line starts", "a\r\n.\r\n..b\r\n.c", "a\r\n..\r\n...b\r\n..c"],
    ["a dot inside a line", "a.b\r\n", "a.b\r\n"],
  ])("%s", (_name, input, expected) => {
    expect(dotStuff(Buffer.from(input)).toString()).toBe(expected);
  });
});

/** A bare relay of the tests' own speaking lock-step SMTP (no PIPELINING), with a hook to misbehave. */
interface LockStepRelay {
  port: number;
  /** Connections accepted, and bodies that arrived in full (up to the "."), over all of them. */
  connections: number;
  bodies: number;
  close(): Promise<void>;
}

/** A test relay's server listening on a free port, its counts read live. */
async function listening(server: Server, state: { connections: number; bodies: number }): Promise<LockStepRelay> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  return {
    port: (server.address() as AddressInfo).port,
    get connections() {
      return state.connections;
    },
    get bodies() {
      return state.bodies;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function lockStepRelay(
  name: string,
  hooks: {
    /** Sees each command line (upper case) first; true when it dealt with it (e.g. dropped the connection). */
    onLine?: (line: string, connection: number, socket: Socket) => boolean;
    /** Sees each body in full before the reply; true when it dealt with it. */
    onBody?: (socket: Socket) => boolean;
  },
): Promise<LockStepRelay> {
  const state = { connections: 0, bodies: 0 };
  const server: Server = createServer((socket: Socket) => {
    const connection = ++state.connections;
    let buffered = "";
    let inData = false;
    socket.on("error", () => undefined);
    socket.write(`220 ${name} ESMTP\r\n`);
    socket.on("data", (chunk: Buffer) => {
      buffered += chunk.toString("latin1");
      for (;;) {
        if (inData) {
          const end = buffered.indexOf("\r\n.\r\n");
          if (end < 0) return;
          buffered = buffered.slice(end + 5);
          inData = false;
          state.bodies += 1;
          if (hooks.onBody?.(socket)) return;
          socket.write("250 2.0.0 queued\r\n");
          continue;
        }
        const end = buffered.indexOf("\r\n");
        if (end < 0) return;
        const line = buffered.slice(0, end).toUpperCase();
        buffered = buffered.slice(end + 2);
        if (hooks.onLine?.(line, connection, socket)) return;
        if (line.startsWith("EHLO")) socket.write(`250-${name}\r\n250 8BITMIME\r\n`);
        else if (line.startsWith("DATA")) {
          inData = true;
          socket.write("354 go on\r\n");
        } else if (line.startsWith("QUIT")) socket.end("221 bye\r\n");
        else socket.write("250 ok\r\n");
      }
    });
  });
  return listening(server, state);
}

/**
 * A bare relay of the tests' own offering PIPELINING and CHUNKING (BDAT n LAST only), with hooks to misbehave;
 * replies to what arrived in one read go out together.
 */
async function chunkingRelay(hooks: {
  /** Sees each command line (upper case) first; true when it dealt with it (no reply). */
  onLine?: (line: string, connection: number, socket: Socket) => boolean;
  /** Sees each message in full (the count over all connections) before its reply; true when it dealt with it. */
  onMessage?: (connection: number, messages: number, socket: Socket) => boolean;
}): Promise<LockStepRelay> {
  const state = { connections: 0, bodies: 0 };
  const server: Server = createServer((socket: Socket) => {
    const connection = ++state.connections;
    let buffered = Buffer.alloc(0);
    socket.on("error", () => undefined);
    socket.write("220 chunky ESMTP\r\n");
    socket.on("data", (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      let replies = "";
      for (;;) {
        const end = buffered.indexOf("\r\n");
        if (end < 0) break;
        const line = buffered.subarray(0, end).toString("latin1").toUpperCase();
        const size = /^BDAT (\d+) LAST$/.exec(line);
        if (size && buffered.length < end + 2 + Number(size[1])) break;
        buffered = buffered.subarray(end + 2 + (size ? Number(size[1]) : 0));
        if (size) {
          state.bodies += 1;
          if (hooks.onMessage?.(connection, state.bodies, socket)) {
            if (socket.destroyed) return;
            continue;
          }
          replies += "250 2.0.0 queued\r\n";
          continue;
        }
        if (hooks.onLine?.(line, connection, socket)) {
          if (socket.destroyed) return;
          continue;
        }
        if (line.startsWith("EHLO")) replies += "250-chunky\r\n250-PIPELINING\r\n250 CHUNKING\r\n";
        else if (line.startsWith("QUIT")) {
          socket.end(`${replies}221 bye\r\n`);
          return;
        } else replies += "250 ok\r\n";
      }
      if (replies) socket.write(replies);
    });
  });
  return listening(server, state);
}
