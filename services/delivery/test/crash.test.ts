import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@connectrpc/connect";
import { delivery } from "@emailsvc/proto";
import { createServiceTransport } from "@emailsvc/grpc";
import { newId } from "@emailsvc/ids";
import { as, tenant } from "./harness.js";
import { FakeTemplates } from "./support/fake-templates.js";
import { SmtpSink } from "@emailsvc/testing";

// Issue 6, defect 3 (delivery's part): after kill -9 mid-send, queued mail
// must go out within seconds of the next start, and only the messages whose
// hand-off was in flight may go out twice, with the same Message-ID.
//
// The delivery service runs alone in a child process (test/support/
// delivery-child.js) against the real SMTP sink, which holds its reply to
// DATA so the kill lands inside the hand-off. The stalled-mail sweep is set to
// an hour, so only the lease running out can bring the email back: with the
// old 60 s lease nothing could be sent again before RESUME_BOUND_MS had
// passed. The bound is no measure of speed (README: ~10–20 s measured).

const RESUME_BOUND_MS = 45_000;
const RECIPIENTS = ["crash-a@example.com", "crash-b@example.com", "crash-c@example.com"];
const FROM = "Ops <ops@crash.example>";
const brokers = process.env.KAFKA_BROKERS ?? "";

interface Setup {
  name: string;
  /** Child settings besides the per-run ones. */
  settings: () => { mongoUrl?: string; kafkaBrokers?: string };
}

const setups: Setup[] = [
  { name: "embedded store, durable in-process bus", settings: () => ({}) },
  {
    name: "MongoDB (FerretDB) and Kafka",
    settings: () => {
      if (!process.env.MONGO_URL || !brokers) throw new Error("MONGO_URL and KAFKA_BROKERS are not set: run through the repository's Jest config, whose globalSetup starts both");
      return { mongoUrl: process.env.MONGO_URL, kafkaBrokers: brokers };
    },
  },
];

describe.each(setups)("delivery killed with SIGKILL mid-send ($name)", ({ settings }) => {
  let sink: SmtpSink;
  let templates: FakeTemplates;
  let dataDir: string;
  let child: ChildProcess | undefined;

  beforeAll(async () => {
    sink = await new SmtpSink().start();
    templates = await new FakeTemplates().start();
    dataDir = mkdtempSync(join(tmpdir(), "delivery-crash-"));
  });
  afterAll(async () => {
    if (child && child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      await exited(child);
    }
    await sink.close();
    await templates.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it(
    "sends every queued email within seconds of the restart; only the in-flight ones arrive twice, with the same Message-ID",
    async () => {
      const options = {
        ...settings(),
        dataDir,
        dbName: `delivery_crash_${newId("db").slice(3, 20)}`,
        templatesUrl: templates.url,
        smtpUrl: sink.url(),
        from: FROM,
        group: `delivery-crash-${newId("grp").slice(4)}`,
      };
      const t = tenant("live");
      templates.put(t, { slug: "receipt", subject: "Receipt {{n}}", html: "<p>Receipt {{n}}</p>" });

      // The relay takes DATA and holds its reply: the hand-off is in flight.
      sink.dataDelayMs = 10 * 60_000;
      const firstData = sink.nextData();
      let started = await startChild(options);
      child = started.child;
      let client = createClient(delivery.DeliveryService, createServiceTransport(started.url));
      const ids: string[] = [];
      for (const [i, to] of RECIPIENTS.entries()) {
        const { email } = await client.sendEmail({ templateSlug: "receipt", to, variables: { n: String(i) } }, as(t));
        ids.push(email!.id);
      }
      await firstData;
      child.kill("SIGKILL");
      await exited(child);
      // What the child had handed over before it died has arrived by now: that is in flight.
      await new Promise((r) => setTimeout(r, 300));
      const inFlight = new Set(sink.messages.map((m) => m.envelope.to[0]!.toLowerCase()));
      // The relay answers what it held; the client is gone, so it never heard a 250.
      sink.dataDelayMs = 0;
      sink.releaseHeld();

      const restartedAt = Date.now();
      started = await startChild(options);
      child = started.child;
      client = createClient(delivery.DeliveryService, createServiceTransport(started.url));
      for (const id of ids) {
        await poll(async () => (await client.getEmail({ id }, as(t))).email!.status === delivery.EmailStatus.SENT, `email ${id} sent after the restart`, RESUME_BOUND_MS - (Date.now() - restartedAt));
      }

      expect(inFlight.size).toBeGreaterThanOrEqual(1);
      for (const [i, to] of RECIPIENTS.entries()) {
        const copies = sink.to(to);
        // Every copy, the first one cut off included, carries the email's one Message-ID.
        expect(new Set(copies.map((m) => m.parsed.messageId))).toEqual(new Set([`<${ids[i]}@crash.example>`]));
        expect(copies.filter((m) => m.accepted)).toHaveLength(1);
        expect(copies.length).toBe(inFlight.has(to) ? 2 : 1);
      }
    },
    RESUME_BOUND_MS + 60_000,
  );
});

async function startChild(options: Record<string, unknown>): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [join(__dirname, "support", "delivery-child.js"), JSON.stringify(options)], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { PATH: process.env.PATH ?? "", ...(process.env.DELIVERY_TEST_LOG ? { DELIVERY_TEST_LOG: "1" } : {}) },
  });
  const output: string[] = [];
  child.stderr!.on("data", (d) => {
    output.push(String(d));
    if (process.env.DELIVERY_TEST_LOG) process.stderr.write(String(d));
  });
  const url = await new Promise<string>((resolve, reject) => {
    let buffered = "";
    child.stdout!.on("data", (d) => {
      buffered += String(d);
      const line = buffered.split("\n").find((l) => l.startsWith("{\"url\""));
      if (line) resolve((JSON.parse(line) as { url: string }).url);
    });
    child.once("exit", (code) => reject(new Error(`delivery child exited (${code}) before listening:\n${output.join("")}`)));
  });
  return { child, url };
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once("exit", () => resolve()));
}

async function poll(condition: () => Promise<boolean>, what: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + Math.max(timeoutMs, 0);
  while (!(await condition().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
