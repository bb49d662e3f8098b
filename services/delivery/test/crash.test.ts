import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient, type Client } from "@connectrpc/connect";
import { delivery } from "@emailsvc/proto";
import { createServiceTransport } from "@emailsvc/runtime";
import { freePort } from "@emailsvc/testing";
import { as, tenant } from "./harness.js";
import { FakeTemplates } from "./support/fake-templates.js";
import { exited, poll, startNode, stopChild } from "./support/processes.js";
import { SmtpSink } from "./support/smtp-sink.js";

// Issue 6, defect 3 (delivery's part): after kill -9, messages whose SMTP
// hand-off was in flight went out twice, and a crash mid-send left the email
// leased for 60 s. Here the delivery service runs alone, as in a container
// (`services/delivery/dist/main.js`: the embedded store and the durable
// in-process bus under DATA_DIR), and sends to a real SMTP server that holds
// its reply to DATA, so the kill lands inside a hand-off: the message is on
// the relay, which has not said 250. The process is killed with SIGKILL and
// started again on the same DATA_DIR.
//
// After the restart the queued mail must go out within RESUME_BOUND_MS. The
// stalled sweep is set to an hour, so only the bus (which kept the unhandled
// send requests) and the lease (which a dead attempt leaves to run out) can
// make it pass. The bound only catches a service that does not resume in
// seconds: the old 60-second lease took a minute. It is no measure of speed.
// embedded/test/restart.test.ts covers mail queued (not in flight) across a
// restart of the whole platform.

const MAIN = join(__dirname, "..", "dist", "main.js");
/** Far below the old behaviour (the old lease alone held the email for 60 s after the kill). */
const RESUME_BOUND_MS = 30_000;
const WELCOME = { slug: "welcome", subject: "Hi {{name}}", html: "<p>Hello {{name}}</p>" };
const RECIPIENTS = ["inflight-one@example.com", "inflight-two@example.com", "inflight-three@example.com"];

describe("delivery killed with SIGKILL inside an SMTP hand-off", () => {
  let sink: SmtpSink | undefined;
  let templates: FakeTemplates | undefined;
  let child: ChildProcess | undefined;
  let dataDir: string | undefined;

  afterEach(async () => {
    await stopChild(child);
    await sink?.close();
    await templates?.close();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it(
    "sends the queued mail within seconds of the restart; only what was in flight goes again, with the same Message-ID",
    async () => {
      sink = await new SmtpSink().start();
      templates = await new FakeTemplates().start();
      dataDir = mkdtempSync(join(tmpdir(), "delivery-crash-"));
      const port = await freePort();
      const env = {
        PATH: process.env.PATH ?? "",
        DATA_DIR: dataDir,
        GRPC_HOST: "127.0.0.1",
        GRPC_PORT: String(port),
        METRICS_PORT: "0",
        TEMPLATES_URL: templates.url,
        EMAIL_PROVIDER: "smtp",
        SMTP_URL: sink.url(),
        EMAIL_FROM: "Shop <shop@example.test>",
        DELIVERY_STALLED_AFTER_MS: String(60 * 60_000),
        LOG_LEVEL: "warn",
      };
      const client = createClient(delivery.DeliveryService, createServiceTransport(`http://127.0.0.1:${port}`));
      const t = tenant("live");
      templates.put(t, WELCOME);
      const start = () => startNode(MAIN, env, async () => (await client.listEmails({}, as(t)), true), "delivery's gRPC API");
      child = await start();

      // The relay holds every reply to DATA: each hand-off stays in flight.
      sink.dataDelayMs = 10 * 60_000;
      const firstHandOff = sink.nextData();
      const ids: string[] = [];
      for (const [i, to] of RECIPIENTS.entries()) {
        const { email } = await client.sendEmail({ templateSlug: "welcome", to, variables: { name: `N${i}` } }, as(t));
        ids.push(email!.id);
      }
      await firstHandOff;
      child.kill("SIGKILL");
      await exited(child);
      // What reached the relay before the kill: none of it accepted (no 250 was sent).
      const inFlight = new Set(sink.messages.map((m) => m.envelope.to[0]!.toLowerCase()));
      expect(inFlight.size).toBeGreaterThanOrEqual(1);

      sink.dataDelayMs = 0;
      child = await start();
      await poll(
        async () => {
          for (const id of ids) if ((await client.getEmail({ id }, as(t))).email!.status !== delivery.EmailStatus.SENT) return false;
          return true;
        },
        "every queued email sent after the restart",
        RESUME_BOUND_MS,
      );

      for (const [i, to] of RECIPIENTS.entries()) {
        const copies = sink.to(to);
        // The relay took each message once; only a message in flight at the kill reached it twice.
        expect(copies.filter((m) => m.accepted)).toHaveLength(1);
        expect(copies).toHaveLength(inFlight.has(to) ? 2 : 1);
        // Every copy of one email carries that email's Message-ID, so a receiver can drop a repeat.
        expect(new Set(copies.map((m) => m.parsed.messageId))).toEqual(new Set([`<${ids[i]}@example.test>`]));
      }
    },
    RESUME_BOUND_MS + 90_000,
  );
});
