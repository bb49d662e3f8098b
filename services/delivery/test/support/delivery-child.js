// The delivery service alone in a child process, as src/main.ts runs it, with
// the settings a test gives as JSON in argv[2] (so that a test can kill -9 it
// mid-send and start it again on the same store and bus). Prints
// {"url": "..."} once it listens. Plain JavaScript on dist/, like
// packages/events/test/support/bus-child.js.
"use strict";
const { openStore } = require("@emailsvc/storage");
const { openBus } = require("@emailsvc/events");
const { createLogger } = require("@emailsvc/telemetry");
const { startDeliveryService } = require("../../dist/server.js");
const { loadProviders } = require("../../dist/providers/registry.js");

async function main() {
  const o = JSON.parse(process.argv[2]);
  const logger = createLogger("delivery", process.env.DELIVERY_TEST_LOG ? "debug" : "warn");
  const store = await openStore({ mongoUrl: o.mongoUrl, dataDir: o.dataDir, dbName: o.dbName });
  const bus = await openBus({ brokers: o.kafkaBrokers, clientId: "delivery", dataDir: o.dataDir, logger: () => {} });
  const service = await startDeliveryService({
    store,
    bus,
    logger,
    port: 0,
    templatesUrl: o.templatesUrl,
    providers: loadProviders({ EMAIL_PROVIDER: "smtp", SMTP_URL: o.smtpUrl }),
    from: o.from,
    consumerGroup: o.group,
    // Only the lease may bring the email back: the stalled sweep would wait an hour.
    stalledAfterMs: 60 * 60_000,
  });
  process.stdout.write(`${JSON.stringify({ url: service.url })}\n`);
  const stop = () => service.close({ graceMs: 1000 }).then(() => bus.close()).then(() => store.close()).then(() => process.exit(0));
  process.once("SIGTERM", stop);
}

main().catch((err) => {
  process.stderr.write(`${err && err.stack ? err.stack : String(err)}\n`);
  process.exit(1);
});
