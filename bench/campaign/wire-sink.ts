import { SMTPServer } from "smtp-server";
import { SmtpSink } from "@emailsvc/testing";

// The SMTP server of the wire benchmark (./wire.ts), in a process of its own
// so that the sender's CPU and the server's are measured apart. `lean`: the
// tests' SmtpSink in its counting mode (a plain socket server, offering
// CHUNKING as Postfix does); `lean-data`: the same without CHUNKING (a client
// sends with DATA); `smtp-server`:
// npm smtp-server reading and dropping the data, as the counting mode did
// before. Asked over IPC for its accepted count and CPU seconds.

async function main(): Promise<void> {
  const mode = process.argv[2] === "smtp-server" ? "smtp-server" : process.argv[2] === "lean-data" ? "lean-data" : "lean";
  let accepted = () => 0;
  let port: number;
  if (mode !== "smtp-server") {
    const sink = await new SmtpSink({ keep: false, chunking: mode === "lean" }).start();
    accepted = () => sink.acceptedCount;
    port = sink.port;
  } else {
    let count = 0;
    const server = new SMTPServer({
      disabledCommands: ["STARTTLS"],
      authOptional: true,
      logger: false,
      onData: (stream, _session, callback) => {
        stream.on("end", () => {
          count += 1;
          callback(null, "OK: queued");
        });
        stream.resume();
      },
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
    accepted = () => count;
    port = (server.server.address() as { port: number }).port;
  }
  process.on("message", (message: { type: string }) => {
    if (message.type === "stats") {
      const cpu = process.cpuUsage();
      process.send!({ type: "stats", accepted: accepted(), cpuSeconds: (cpu.user + cpu.system) / 1e6 });
    }
  });
  process.send!({ type: "ready", port });
}

void main();
