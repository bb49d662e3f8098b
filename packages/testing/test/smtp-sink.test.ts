import { connect, type Socket } from "node:net";
import { SmtpSink } from "../src/smtp-sink";

// The sink in both modes, driven by a bare SMTP dialogue over a socket (no
// client library between the test and the server).

/** Sends one message per recipient list on one connection, then QUIT; resolves with the server's replies. */
async function sendAll(port: number, messages: string[][]): Promise<string[]> {
  const socket: Socket = connect(port, "127.0.0.1");
  socket.setEncoding("utf8");
  const replies: string[] = [];
  let buffer = "";
  let waiting: ((line: string) => void) | undefined;
  const queued: string[] = [];
  socket.on("data", (chunk: string) => {
    buffer += chunk;
    let end: number;
    while ((end = buffer.indexOf("\r\n")) >= 0) {
      const line = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      if (/^\d{3}-/.test(line)) continue; // continuation of a multi-line reply
      if (waiting) {
        const wake = waiting;
        waiting = undefined;
        wake(line);
      } else queued.push(line);
    }
  });
  const reply = (): Promise<string> =>
    queued.length > 0 ? Promise.resolve(queued.shift()!) : new Promise((resolve) => (waiting = resolve));
  const say = async (line: string): Promise<string> => {
    socket.write(`${line}\r\n`);
    const r = await reply();
    replies.push(r);
    return r;
  };
  await reply(); // greeting
  await say("EHLO test.local");
  for (const [i, to] of messages.entries()) {
    await say("MAIL FROM:<sender@test.local>");
    for (const address of to) await say(`RCPT TO:<${address}>`);
    await say("DATA");
    await say(`From: sender@test.local\r\nTo: ${to.join(", ")}\r\nSubject: message ${i}\r\n\r\nBody ${i}\r\n.`);
  }
  await say("QUIT");
  socket.end();
  return replies;
}

describe("SmtpSink", () => {
  it("keeps every message parsed by default, and counts them per recipient", async () => {
    const sink = await new SmtpSink().start();
    try {
      await sendAll(sink.port, [["a@example.com"], ["B@example.com", "a@example.com"]]);
      expect(sink.messages).toHaveLength(2);
      expect(sink.accepted.map((m) => m.parsed.subject)).toEqual(["message 0", "message 1"]);
      expect(sink.to("a@example.com")).toHaveLength(2);
      expect(sink.acceptedCount).toBe(2);
      expect(Object.fromEntries(sink.recipientCounts)).toEqual({ "a@example.com": 2, "b@example.com": 1 });
    } finally {
      await sink.close();
    }
  });

  it("only counts with keep: false, and whenAccepted resolves at the count", async () => {
    const sink = await new SmtpSink({ keep: false }).start();
    try {
      const third = sink.whenAccepted(3);
      let done = false;
      void third.then(() => (done = true));
      await sendAll(sink.port, [["x@example.com"], ["y@example.com"]]);
      await new Promise((resolve) => setImmediate(resolve));
      expect(done).toBe(false);
      const replies = await sendAll(sink.port, [["X@example.com"]]);
      expect(replies.filter((r) => r.startsWith("250 OK: queued"))).toHaveLength(1);
      await third;
      expect(sink.messages).toHaveLength(0);
      expect(sink.acceptedCount).toBe(3);
      expect(Object.fromEntries(sink.recipientCounts)).toEqual({ "x@example.com": 2, "y@example.com": 1 });
      await sink.whenAccepted(2); // already reached
    } finally {
      await sink.close();
    }
  });

  it("does not count a message the relay refuses, in either mode", async () => {
    const sink = await new SmtpSink({ keep: false }).start();
    try {
      sink.dataReplies.set("busy@example.com", [{ code: 451, text: "try later" }]);
      const replies = await sendAll(sink.port, [["busy@example.com"], ["busy@example.com"]]);
      expect(replies.some((r) => r.startsWith("451"))).toBe(true);
      expect(sink.acceptedCount).toBe(1);
      expect(sink.recipientCounts.get("busy@example.com")).toBe(1);
    } finally {
      await sink.close();
    }
  });

  it.each([true, false])("offers CHUNKING by default (or not: %s), and reads BDAT chunks, captured as sent, pipelined", async (offer) => {
    const sink = await new SmtpSink({ keep: false, capture: true, ...(offer ? {} : { chunking: false }) }).start();
    try {
      sink.rcptReplies.set("gone@example.com", { code: 550, text: "no such user" });
      const socket: Socket = connect(sink.port, "127.0.0.1");
      let received = "";
      socket.on("data", (chunk: Buffer) => (received += chunk.toString("latin1")));
      const repliesSoFar = (count: number) =>
        new Promise<string[]>((resolve) => {
          const check = () => {
            const lines = received.split("\r\n").filter((line) => /^\d{3} /.test(line));
            if (lines.length >= count) resolve(lines);
            else socket.once("data", check);
          };
          check();
        });
      await repliesSoFar(1);
      socket.write("EHLO test.local\r\n");
      const [, ehlo] = await repliesSoFar(2);
      expect(received.includes("250-CHUNKING")).toBe(offer);
      expect(ehlo).toBe("250 AUTH PLAIN");
      if (!offer) {
        socket.write("BDAT 3 LAST\r\n");
        expect((await repliesSoFar(3))[2]).toMatch(/^502 /);
        socket.destroy();
        return;
      }
      // Three transactions in one write: two chunks (".." stays as it is), a refused recipient, one chunk.
      const first = "Subject: one\r\n\r\n..dots\r\n";
      const second = "Subject: two\r\n\r\nx\r\n";
      socket.write(
        `MAIL FROM:<s@test.local>\r\nRCPT TO:<a@example.com>\r\nBDAT 10\r\n${first.slice(0, 10)}BDAT ${first.length - 10} LAST\r\n${first.slice(10)}` +
          `MAIL FROM:<s@test.local>\r\nRCPT TO:<gone@example.com>\r\nBDAT 4 LAST\r\nnope` +
          `MAIL FROM:<s@test.local>\r\nRCPT TO:<b@example.com>\r\nBDAT ${second.length} LAST\r\n${second}QUIT\r\n`,
      );
      const replies = await repliesSoFar(13);
      expect(replies.slice(2).map((line) => line.slice(0, 3))).toEqual(["250", "250", "250", "250", "250", "550", "554", "250", "250", "250", "221"]);
      expect(sink.chunkedMessages).toBe(2);
      expect(Object.fromEntries(sink.recipientCounts)).toEqual({ "a@example.com": 1, "b@example.com": 1 });
      expect(sink.captured.map((m) => ({ raw: m.raw.toString("latin1"), to: m.envelope.to, command: m.command, accepted: m.accepted }))).toEqual([
        { raw: first, to: ["a@example.com"], command: "BDAT", accepted: true },
        { raw: second, to: ["b@example.com"], command: "BDAT", accepted: true },
      ]);
      socket.destroy();
    } finally {
      await sink.close();
    }
  });

  it("captures a message that came with DATA with its dot-stuffing undone", async () => {
    const sink = await new SmtpSink({ keep: false, capture: true, chunking: false }).start();
    try {
      await sendAll(sink.port, [["a@example.com"]]);
      expect(sink.captured.map((m) => m.raw.toString("latin1"))).toEqual(["From: sender@test.local\r\nTo: a@example.com\r\nSubject: message 0\r\n\r\nBody 0\r\n"]);
      expect(sink.captured[0]!.command).toBe("DATA");
    } finally {
      await sink.close();
    }
  });
});
