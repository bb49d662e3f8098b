import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** A request the receiver got. */
export interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
}

/**
 * An HTTP receiver standing for an integrator's endpoint: it records every
 * request and answers the statuses queued for its path (then 200).
 */
export class Receiver {
  readonly received: Received[] = [];
  private readonly answers = new Map<string, Array<number | { redirect: string }>>();
  private server!: Server;
  port = 0;

  static async start(): Promise<Receiver> {
    const receiver = new Receiver();
    receiver.server = createServer((req, res) => receiver.handle(req, res));
    await new Promise<void>((resolve) => receiver.server.listen(0, "127.0.0.1", resolve));
    receiver.port = (receiver.server.address() as AddressInfo).port;
    return receiver;
  }

  /** Answers the next requests to `path` with these statuses (or a redirect), in order; 200 after. */
  answer(path: string, ...answers: Array<number | { redirect: string }>): void {
    this.answers.set(path, [...(this.answers.get(path) ?? []), ...answers]);
  }

  /** Answers every request to `path` with `status` from now on. */
  always(path: string, status: number): void {
    this.answers.set(path, new Array<number>(100_000).fill(status));
  }

  to(path: string): Received[] {
    return this.received.filter((r) => r.path === path);
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const path = req.url ?? "/";
      this.received.push({ path, headers: req.headers as Record<string, string>, body: Buffer.concat(chunks).toString("utf8") });
      const answer = this.answers.get(path)?.shift() ?? 200;
      if (typeof answer === "object") {
        res.writeHead(302, { location: answer.redirect });
        res.end();
      } else {
        res.writeHead(answer, { "content-type": "text/plain" });
        res.end("ok");
      }
    });
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

