// A process that uses the durable in-process bus, for the restart tests
// (durable.test.ts): they stop it or kill -9 it mid-stream and reopen its
// directory. Plain CommonJS on the built package, so that it runs under node
// alone, as the platform does.
//
//   node bus-child.js <bus dir> <report file> stream   publish and consume until stopped
//   node bus-child.js <bus dir> <report file> hold     open the bus and wait
//
// The report file gets one line per fact, written synchronously (it survives
// kill -9): "ready"; "P <n>" once the publish of every event up to seq n has
// resolved; "H <n>" once the handler of seq n has run (before it returns).
// Event n has key k<n % 7> and value "<n>".
"use strict";
const { appendFileSync } = require("node:fs");
const { InProcessEventBus } = require("../../dist/index.js");

const [dir, report, mode] = process.argv.slice(2);
const note = (line) => appendFileSync(report, `${line}\n`);

async function main() {
  const bus = await InProcessEventBus.open({ dir, logger: () => {} });
  let stopping = false;
  process.on("SIGTERM", () => {
    stopping = true;
    bus.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
  await bus.ensureTopics(["stream"]);
  note("ready");
  if (mode === "hold") {
    setInterval(() => {}, 60_000); // stay until stopped
    return;
  }

  let handled = 0;
  await bus.subscribe({
    group: "g",
    topics: ["stream"],
    handler: async (event) => {
      note(`H ${Buffer.from(event.value).toString()}`);
      // A consumer slower than the producer, so that a backlog builds up.
      if (++handled % 20 === 0) await new Promise((resolve) => setTimeout(resolve, 1));
    },
  });
  for (let seq = 0; !stopping; ) {
    const batch = [];
    for (let i = 0; i < 50; i++, seq++) batch.push({ key: `k${seq % 7}`, value: Buffer.from(String(seq)), headers: { seq: String(seq) } });
    try {
      await bus.publish("stream", batch);
    } catch {
      return; // closed by SIGTERM
    }
    note(`P ${seq - 1}`);
  }
}

main().catch((error) => {
  process.stderr.write(`${error && error.stack ? error.stack : error}\n`);
  process.exit(1);
});
