import { mkdtempSync } from "node:fs";
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./ports.js";
import { startProcess, waitUntilReady, type ManagedProcess } from "./proc.js";

// A local Amazon SES (npm aws-ses-v2-local, its own process on a free port)
// for the SES provider's tests, behind a small recording front of ours: the
// emulator keeps what it parsed of each message (GET /store) but not the raw
// bytes, and those are what a DKIM verifier must see. The front keeps each
// SendEmail request's Content.Raw as SES received it, with the MessageId the
// emulator answered, and passes everything else through. `down()` closes the
// front (connections refused, as with an endpoint that is not there) and
// `up()` opens it again on the same port.

/** One SendEmail the emulator accepted, as the client sent it. */
export interface SesSentMessage {
  /** The MessageId the emulator answered (what real SES answers, and reports in its notifications as mail.messageId). */
  messageId: string;
  /** Content.Raw.Data, decoded: the MIME message byte for byte. */
  raw: Buffer;
  fromEmailAddress: string | undefined;
  /** Destination.ToAddresses. */
  to: string[];
  configurationSetName: string | undefined;
}

/** What the emulator itself stored of a message (its `GET /store`). */
export interface SesStoredEmail {
  messageId: string;
  from: string;
  destination: { to: string[]; cc: string[]; bcc: string[] };
  subject: string;
  body: { html?: string; text?: string };
}

export interface SesEmulator {
  /** SES_ENDPOINT for the client: the recording front. */
  readonly endpoint: string;
  /** Accepted SendEmail requests, oldest first. */
  readonly sent: SesSentMessage[];
  /** The emulator's own store (GET /store): what it parsed of each message. */
  stored(): Promise<SesStoredEmail[]>;
  /** Takes the endpoint away: new connections are refused until up(). */
  down(): Promise<void>;
  up(): Promise<void>;
  close(): Promise<void>;
}

const SEND_EMAIL_PATH = "/v2/email/outbound-emails";

function readBody(stream: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    stream.on("end", () => resolve(Buffer.concat(chunks)));
    stream.on("error", reject);
  });
}

function listen(server: Server, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
}

export async function startSesEmulator(): Promise<SesEmulator> {
  const dir = mkdtempSync(join(tmpdir(), "emailsvc-ses-"));
  const emulatorPort = await freePort();
  const logFile = join(dir, "aws-ses-v2-local.log");
  const proc: ManagedProcess = startProcess({
    command: process.execPath,
    args: [require.resolve("aws-ses-v2-local/dist/cli.js"), "--host", "127.0.0.1", "--port", String(emulatorPort)],
    cwd: dir,
    logFile,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir },
    cleanupDirs: [dir],
  });
  const emulatorUrl = `http://127.0.0.1:${emulatorPort}`;
  try {
    await waitUntilReady("aws-ses-v2-local", proc, async () => (await fetch(`${emulatorUrl}/health-check`)).ok, 30_000);
  } catch (err) {
    await proc.stop();
    throw err;
  }

  const sent: SesSentMessage[] = [];
  const pass = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const body = await readBody(req);
    const upstream = request(`${emulatorUrl}${req.url ?? "/"}`, { method: req.method, headers: req.headers }, (answer) => {
      void readBody(answer).then((answerBody) => {
        if (req.method === "POST" && req.url?.split("?")[0] === SEND_EMAIL_PATH && answer.statusCode === 200) {
          const request = JSON.parse(body.toString("utf8")) as {
            FromEmailAddress?: string;
            Destination?: { ToAddresses?: string[] };
            ConfigurationSetName?: string;
            Content?: { Raw?: { Data?: string } };
          };
          const data = request.Content?.Raw?.Data;
          if (data !== undefined) {
            sent.push({
              messageId: (JSON.parse(answerBody.toString("utf8")) as { MessageId: string }).MessageId,
              raw: Buffer.from(data, "base64"),
              fromEmailAddress: request.FromEmailAddress,
              to: request.Destination?.ToAddresses ?? [],
              configurationSetName: request.ConfigurationSetName,
            });
          }
        }
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        res.end(answerBody);
      }, () => res.destroy());
    });
    upstream.on("error", () => res.destroy());
    upstream.end(body);
  };

  const frontPort = await freePort();
  let front: Server | undefined;
  const up = async (): Promise<void> => {
    if (front) return;
    const server = createServer((req, res) => void pass(req, res).catch(() => res.destroy()));
    await listen(server, frontPort);
    front = server;
  };
  const down = async (): Promise<void> => {
    const server = front;
    if (!server) return;
    front = undefined;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  await up();

  return {
    endpoint: `http://127.0.0.1:${frontPort}`,
    sent,
    stored: async () => ((await (await fetch(`${emulatorUrl}/store`)).json()) as { emails: SesStoredEmail[] }).emails,
    down,
    up,
    close: async () => {
      await down();
      await proc.stop();
    },
  };
}
