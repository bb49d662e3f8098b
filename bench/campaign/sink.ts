import type { AddressInfo } from "node:net";
import { SMTPServer } from "smtp-server";

/**
 * The SMTP server both campaigns of the side-by-side run deliver to: it
 * accepts everything and only counts, per recipient, what it accepted (the
 * tests' SmtpSink parses and keeps every message, too slow for 100,000).
 */
export class CountingSink {
  private server: SMTPServer | undefined;
  readonly perRecipient = new Map<string, number>();
  accepted = 0;
  port = 0;

  async start(): Promise<this> {
    this.server = new SMTPServer({
      authOptional: true,
      disabledCommands: ["STARTTLS", "AUTH"],
      logger: false,
      size: 1 << 20,
      maxClients: 200,
      onData: (stream, session, callback) => {
        stream.on("data", () => undefined);
        stream.on("end", () => {
          this.accepted += 1;
          for (const rcpt of session.envelope.rcptTo) {
            const to = rcpt.address.toLowerCase();
            this.perRecipient.set(to, (this.perRecipient.get(to) ?? 0) + 1);
          }
          callback();
        });
      },
    });
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    this.port = (this.server.server.address() as AddressInfo).port;
    return this;
  }

  reset(): void {
    this.perRecipient.clear();
    this.accepted = 0;
  }

  /** Recipients of `n` (`address(i)`) with no message, and with more than one. */
  tally(n: number, address: (i: number) => string): { lost: number; duplicates: number } {
    let lost = 0;
    for (let i = 0; i < n; i++) if (!this.perRecipient.has(address(i))) lost++;
    const duplicates = [...this.perRecipient.values()].filter((c) => c > 1).length;
    return { lost, duplicates };
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
