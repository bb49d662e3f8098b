import { fork, type ChildProcess } from "node:child_process";
import { setMaxListeners } from "node:events";
import { generateKeyPairSync } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SmtpProvider, parseSmtpUrl, type DkimSigningKey, type OutgoingMessage } from "@emailsvc/delivery";
import nodemailer from "nodemailer";
import DKIM from "nodemailer/lib/dkim";
import MailComposer from "nodemailer/lib/mail-composer";
import { describeMachine } from "../support/machine.js";

// The wire alone: the SMTP provider sending built messages (a ~6 KB
// newsletter, HTML and text, per-recipient To, Subject, Message-ID and
// List-Unsubscribe) to one SMTP server, at 1, 5, 20 and 50 connections, with
// BDAT (the lean sink offers CHUNKING) and with DATA (the lean sink without
// it), and without and with DKIM (an RSA-2048 and an Ed25519 signature per message). The
// server runs in a process of its own (./wire-sink.ts), so the sender's CPU
// (process.cpuUsage of this process: writing, signing and the SMTP dialogue)
// and the server's are counted apart. "before" rows are the path this
// replaced: nodemailer's MailComposer, its DKIM signer and its SMTP pool,
// as the provider used them (RSA only: the Ed25519 signature was ours).
//
// `npm run bench:smtp-wire -w @emailsvc/bench` (WIRE_BENCH_N, default 20,000;
// rows with DKIM send a quarter of that: RSA signing dominates them;
// WIRE_BENCH_ROWS, e.g. `emailsvc,lean sink,20,false`, runs only the rows whose
// client, server, connections and DKIM match each field given).

export interface WireRow {
  client: "emailsvc" | "nodemailer (before)";
  /** "lean sink" offers CHUNKING (ours sends with BDAT), "lean sink, DATA" does not; smtp-server has none. */
  server: "lean sink" | "lean sink, DATA" | "smtp-server";
  connections: number;
  dkim: boolean;
  messages: number;
  seconds: number;
  messages_per_s: number;
  /** CPU of the sending process per message, µs. */
  sender_cpu_us: number;
  /** CPU of the SMTP server's process per message, µs. */
  server_cpu_us: number;
  /** Connections the client opened (ours only). */
  connections_opened?: number;
}

const HTML = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>News</title></head>
<body style="margin:0;padding:0;background:#f4f4f4;font-family:Arial,Helvetica,sans-serif">
<table role="presentation" width="100%" cellpadding="0" cellspacing="0" style="background:#f4f4f4">
<tr><td align="center" style="padding:24px 12px">
<table role="presentation" width="600" cellpadding="0" cellspacing="0" style="background:#ffffff;border-radius:4px">
<tr><td style="padding:24px;font-size:20px;line-height:28px;color:#222222">Hello {{name}}, here is what is new this week.</td></tr>
${Array.from(
  { length: 8 },
  (_, i) => `<tr><td style="padding:12px 24px;font-size:14px;line-height:22px;color:#444444">
<h2 style="margin:0 0 8px;font-size:16px;color:#111111">Story ${i + 1}: something worth reading</h2>
<p style="margin:0 0 8px">Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris.</p>
<a href="https://example.com/news/${i + 1}?utm_source=newsletter&amp;utm_medium=email" style="color:#1a73e8">Read more</a></td></tr>`,
).join("\n")}
<tr><td style="padding:24px;font-size:12px;color:#888888">You get this because you subscribed. <a href="{{unsubscribe}}" style="color:#888888">Unsubscribe</a></td></tr>
</table></td></tr></table></body></html>`;
const TEXT = `Hello {{name}}, here is what is new this week.\n\n${Array.from({ length: 8 }, (_, i) => `Story ${i + 1}: something worth reading\nLorem ipsum dolor sit amet, consectetur adipiscing elit.\nRead more [https://example.com/news/${i + 1}]`).join("\n\n")}\n\nUnsubscribe: {{unsubscribe}}\n`;

const SENDER = { name: "Acme News", address: "news@acme.example", domain: "acme.example", header: "Acme News <news@acme.example>" };

/** The i-th recipient's message, as delivery hands it to a provider. */
function messageFor(i: number, dkim: DkimSigningKey[] | undefined): OutgoingMessage {
  const to = `reader${i}@example.com`;
  const unsubscribe = `https://api.acme.example/unsubscribe?token=${i.toString(36).padStart(40, "x")}`;
  const name = `Reader ${i}`;
  const messageId = `<eml_${i.toString(36)}@acme.example>`;
  return {
    emailId: `eml_${i}`,
    from: SENDER,
    to,
    subject: `News for ${name}`,
    html: HTML.replace("{{name}}", name).replace("{{unsubscribe}}", unsubscribe),
    text: TEXT.replace("{{name}}", name).replace("{{unsubscribe}}", unsubscribe),
    messageId,
    headers: {
      From: SENDER.header,
      To: to,
      Subject: `News for ${name}`,
      "Message-ID": messageId,
      "List-Unsubscribe": `<${unsubscribe}>`,
      "List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
      "List-Id": "<acc_bench.live.acme.example>",
      "X-Campaign-Id": "cmp_bench",
      "Feedback-ID": "cmp_bench:acc_bench:emailsvc",
    },
    ...(dkim ? { dkim } : {}),
  };
}

/** The path this replaced, for the "before" rows: MailComposer, nodemailer's RSA signer, its pool (default options). */
function nodemailerSender(port: number, connections: number) {
  const transport = nodemailer.createTransport({ pool: true, host: "127.0.0.1", port, maxConnections: connections, ignoreTLS: true, logger: false });
  return {
    async send(message: OutgoingMessage): Promise<void> {
      const { From: _f, To: _t, Subject: _s, "Message-ID": _m, ...extra } = message.headers;
      let raw: Buffer = await new MailComposer({
        from: { name: message.from.name, address: message.from.address },
        to: message.to,
        subject: message.subject,
        html: message.html,
        text: message.text,
        messageId: message.messageId,
        headers: extra,
      })
        .compile()
        .build();
      const rsa = message.dkim?.filter((key) => key.privateKey.asymmetricKeyType === "rsa") ?? [];
      if (rsa.length > 0) {
        const signer = new DKIM({ keys: rsa.map((key) => ({ domainName: key.domain, keySelector: key.selector, privateKey: key.privateKey })) });
        const chunks: Buffer[] = [];
        for await (const chunk of signer.sign(raw)) chunks.push(chunk as Buffer);
        raw = Buffer.concat(chunks);
      }
      await transport.sendMail({ envelope: { from: message.from.address, to: [message.to] }, raw });
    },
    close: async () => transport.close(),
  };
}

interface SinkProcess {
  port: number;
  stats(): Promise<{ accepted: number; cpuSeconds: number }>;
  stop(): void;
}

async function startSink(server: WireRow["server"]): Promise<SinkProcess> {
  const child: ChildProcess = fork(join(__dirname, "wire-sink.js"), [server === "smtp-server" ? "smtp-server" : server === "lean sink, DATA" ? "lean-data" : "lean"], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const port = await new Promise<number>((resolve, reject) => {
    child.once("message", (message: { type: string; port: number }) => resolve(message.port));
    child.once("exit", (code) => reject(new Error(`the sink exited with ${code}`)));
  });
  return {
    port,
    stats: () =>
      new Promise((resolve) => {
        child.once("message", (message: { accepted: number; cpuSeconds: number }) => resolve(message));
        child.send({ type: "stats" });
      }),
    stop: () => child.kill(),
  };
}

async function oneRun(sink: SinkProcess, row: Pick<WireRow, "client" | "server" | "connections" | "dkim" | "messages">, keys: DkimSigningKey[]): Promise<WireRow> {
  const ours = row.client === "emailsvc" ? new SmtpProvider(parseSmtpUrl(`smtp://127.0.0.1:${sink.port}?pool=${row.connections}`)) : undefined;
  const theirs = ours ? undefined : nodemailerSender(sink.port, row.connections);
  const context = { tenant: "acc_bench:live", signal: new AbortController().signal };
  // One signal for every send here (delivery gives each its own): as many listeners as sends in flight.
  setMaxListeners(0, context.signal);
  const send = ours ? (m: OutgoingMessage) => ours.send(m, context).then(() => undefined) : (m: OutgoingMessage) => theirs!.send(m);
  const before = await sink.stats();
  const cpu = process.cpuUsage();
  const started = performance.now();
  let next = 0;
  // Twice as many sends in flight as connections, as delivery's concurrency runs above its pool.
  await Promise.all(
    Array.from({ length: row.connections * 2 }, async () => {
      while (next < row.messages) await send(messageFor(next++, row.dkim ? keys : undefined));
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  const after = await sink.stats();
  if (after.accepted - before.accepted !== row.messages) throw new Error(`the server accepted ${after.accepted - before.accepted} of ${row.messages}`);
  const result: WireRow = {
    ...row,
    seconds: Math.round(seconds * 100) / 100,
    messages_per_s: Math.round(row.messages / seconds),
    sender_cpu_us: Math.round(((used.user + used.system) / row.messages) * 10) / 10,
    server_cpu_us: Math.round(((after.cpuSeconds - before.cpuSeconds) * 1e6 / row.messages) * 10) / 10,
    ...(ours ? { connections_opened: ours.connectionsOpened } : {}),
  };
  await (ours ?? theirs!).close();
  return result;
}

/**
 * The rows: ours at 1, 5, 20 and 50 connections without and with DKIM (with
 * BDAT), and without DKIM against the sink without CHUNKING (DATA), the
 * path before at 20 (the campaign bench's pool), and both against npm
 * smtp-server at 20 (the counting sink before it had its own lean server).
 */
export async function runWireBench(options: { messages?: number; log?: (line: string) => void; only?: (row: Pick<WireRow, "client" | "server" | "connections" | "dkim">) => boolean } = {}): Promise<WireRow[]> {
  const n = options.messages ?? 20_000;
  const log = options.log ?? console.log;
  const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey;
  const ed = generateKeyPairSync("ed25519").privateKey;
  const keys: DkimSigningKey[] = [
    { domain: "acme.example", selector: "rsa1", privateKey: rsa },
    { domain: "acme.example", selector: "ed1", privateKey: ed },
  ];
  const plan: Array<Pick<WireRow, "client" | "server" | "connections" | "dkim" | "messages">> = [];
  for (const dkim of [false, true]) {
    for (const connections of [1, 5, 20, 50]) plan.push({ client: "emailsvc", server: "lean sink", connections, dkim, messages: dkim ? n / 4 : n });
    if (!dkim) for (const connections of [1, 5, 20, 50]) plan.push({ client: "emailsvc", server: "lean sink, DATA", connections, dkim, messages: n });
    plan.push({ client: "nodemailer (before)", server: "lean sink", connections: 20, dkim, messages: dkim ? n / 4 : n });
  }
  plan.push({ client: "emailsvc", server: "smtp-server", connections: 20, dkim: false, messages: n });
  plan.push({ client: "nodemailer (before)", server: "smtp-server", connections: 20, dkim: false, messages: n });
  const rows: WireRow[] = [];
  const chosen = options.only ? plan.filter(options.only) : plan;
  const sinks = new Map<WireRow["server"], SinkProcess>();
  try {
    for (const step of chosen) {
      let sink = sinks.get(step.server);
      if (!sink) sinks.set(step.server, (sink = await startSink(step.server)));
      const row = await oneRun(sink, step, keys);
      log(JSON.stringify(row));
      rows.push(row);
    }
  } finally {
    for (const sink of sinks.values()) sink.stop();
  }
  return rows;
}

/** The rows as a Markdown table. */
export function wireTable(rows: readonly WireRow[]): string {
  return [
    "| client | server | connections | DKIM | messages | s | messages/s | sender CPU µs/message | server CPU µs/message |",
    "|---|---|---:|---|---:|---:|---:|---:|---:|",
    ...rows.map((r) => `| ${r.client} | ${r.server} | ${r.connections} | ${r.dkim ? (r.client === "emailsvc" ? "RSA+Ed25519" : "RSA") : "—"} | ${r.messages} | ${r.seconds} | ${r.messages_per_s} | ${r.sender_cpu_us} | ${r.server_cpu_us} |`),
  ].join("\n");
}

if (require.main === module) {
  const messages = Number(process.env.WIRE_BENCH_N ?? 20_000);
  const machine = describeMachine();
  const wanted = (process.env.WIRE_BENCH_ROWS ?? "").split(",").filter(Boolean);
  const only = (row: Pick<WireRow, "client" | "server" | "connections" | "dkim">) =>
    [row.client, row.server, String(row.connections), String(row.dkim)].every((value, i) => wanted[i] === undefined || wanted[i] === "*" || value.startsWith(wanted[i]!));
  void runWireBench({ messages, only }).then((rows) => {
    const table = wireTable(rows);
    console.log(table);
    const dir = join(__dirname, "..", "..", "results");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "smtp-wire.json"), JSON.stringify({ machine, messages, rows, at: new Date().toISOString() }, null, 2) + "\n");
  });
}
